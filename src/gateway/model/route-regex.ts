/**
 * Write-time check for regex route paths (`~…`), Kong's 400 schema violation
 * "invalid regex: '<pattern>' (PCRE returned: <error>)"
 * (kong/db/schema/typedefs.lua validate_path_with_regexes). The proxy's
 * router runs regex paths on RE2 (src/gateway/proxy/regex.ts): a path is
 * refused exactly when that engine cannot compile it.
 */
export { routePathError } from '../proxy/regex.js';

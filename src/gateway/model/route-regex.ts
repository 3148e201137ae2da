/**
 * Write-time check for regex route paths (`~…`), Kong's 400 schema violation
 * "invalid regex: '<pattern>' (PCRE returned: <error>)"
 * (kong/db/schema/typedefs.lua validate_path_with_regexes).
 *
 * The proxy's router decides which regex paths it can run
 * (src/gateway/proxy/router.ts). Until it ships a regex engine and exports its
 * validator (`routePathError` in src/gateway/proxy/regex.ts), it matches no
 * regex path at all, so every one is refused here rather than stored to match
 * nothing (issue 14). When the proxy's validator lands, this file becomes:
 *
 *   export { routePathError } from '../proxy/regex.js';
 */

/** Kong's message for a regex path the proxy cannot run, or null for a plain path (or a regex it can run). */
export function routePathError(path: string): string | null {
  if (!path.startsWith('~')) return null;
  return `invalid regex: '${path.slice(1)}' (PCRE returned: regex paths are not supported by this gateway's router)`;
}

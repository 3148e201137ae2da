/**
 * Regex route paths (`~/…`), Kong's "regex magic" (kong/router/utils.lua
 * is_regex_magic). Kong compiles them with PCRE and anchors them at the start
 * of the path (kong/router/transform.lua: `http.path ~ "^…"`); here they run on
 * RE2 (re2js, a pure-JS port): matching is linear in the input whatever the
 * pattern, so no route can be made to backtrack exponentially. The price is
 * RE2's dialect: no look-around and no back-references. A path RE2 cannot
 * compile is refused at write time (routePathError, for the admin API) with
 * Kong's 400 message, never stored to match nothing.
 */
import { RE2JS } from 're2js';

/** A compiled regex path: `lookingAt` anchors it at the start of the path, as Kong's `^` does. */
export interface RegexPath {
  /** The route's path as configured (with `~`). */
  source: string;
  /** Match at the start of `path`: the matched part and Kong's uri_captures, or null. */
  match(path: string): RegexMatch | null;
}

export interface RegexMatch {
  /** The part of the path the regex matched (what strip_path removes). */
  matched: string;
  /** Kong's `uri_captures`: numbered groups (1…n) and named ones. */
  captures: Record<string, string>;
}

/** True for a regex path (Kong: first character `~`). */
export function isRegexPath(path: string): boolean {
  return path.charCodeAt(0) === 126; // '~'
}

/** Compiles a `~…` path. @throws RE2JSException with RE2's message when the pattern is invalid or unsupported */
export function compileRegexPath(path: string): RegexPath {
  const re = RE2JS.compile(path.slice(1));
  const groups = re.groupCount();
  const named = Object.entries(re.namedGroups());
  return {
    source: path,
    match(input: string): RegexMatch | null {
      const m = re.matcher(input);
      if (!m.lookingAt()) return null;
      const captures: Record<string, string> = Object.create(null) as Record<string, string>;
      for (let i = 1; i <= groups; i++) {
        const g = m.group(i);
        if (g !== null) captures[String(i)] = g;
      }
      for (const [name, i] of named) {
        const g = m.group(i);
        if (g !== null) captures[name] = g;
      }
      return { matched: m.group(0) ?? '', captures };
    },
  };
}

/**
 * For the admin API: Kong's message for a route path whose regex does not
 * compile (kong/db/schema/entities/routes.lua validate_path_with_regexes:
 * "invalid regex: '<pattern without ~>' (PCRE returned: <error>)"; here
 * RE2's error text), or
 * null when `path` is not a regex path or compiles. Call it for each entry of
 * `paths` at write time and report a non-null result as a 400 schema
 * violation on that path.
 */
export function routePathError(path: string): string | null {
  if (!isRegexPath(path)) return null;
  try {
    compileRegexPath(path);
    return null;
  } catch (err) {
    return `invalid regex: '${path.slice(1)}' (PCRE returned: ${(err as Error).message})`;
  }
}

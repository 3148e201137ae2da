/**
 * URLs the Hospital API sends to the FHIR server: token-search escaping and
 * next-link re-basing. Every URL built here stays under FHIR_BASE_URL, so the
 * API key is never sent to another host (http://hl7.org/fhir/R4/search.html#escaping; HAPI's next
 * links name its internal base; the original health-tag deployment sent raw identifiers).
 */
import { HospitalApiError } from '../../errors/index.js';

/** http://hl7.org/fhir/R4/search.html#escaping: inside a token value, `\` escapes `\`, `,`, `|` and `$`. */
export function escapeTokenPart(value: string): string {
  return value.replace(/[\\,|$]/g, (c) => `\\${c}`);
}

/**
 * The `identifier` search value, escaped then URL-encoded (http://hl7.org/fhir/R4/search.html#escaping:
 * percent-encoding is the outer layer; `+` must become %2B).
 */
export function identifierQuery(value: string, system: string | null): string {
  const token = system === null ? escapeTokenPart(value) : `${escapeTokenPart(system)}|${escapeTokenPart(value)}`;
  return `identifier=${encodeURIComponent(token)}`;
}

/** True when `u` is FHIR_BASE_URL itself or below it, on the same origin. */
export function isUnderBase(u: URL, base: URL): boolean {
  return u.origin === base.origin && isUnderPath(u.pathname, pathOf(base));
}

/** A URL's path without trailing slashes ('' for the root). */
export function pathOf(u: URL): string {
  return u.pathname.replace(/\/+$/, '');
}

/** `path` is `prefix` or below it; for the root prefix '' that is every path. */
function isUnderPath(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * The server's own idea of its base, read from a Bundle's self link: the path
 * up to the last `/Patient` segment (HAPI writes it with its internal address
 * behind a gateway, e.g. `http://hapi:8080/fhir/Patient/1/$everything`).
 */
export function serverBaseFromSelf(selfHref: string | undefined): URL | null {
  if (!selfHref) return null;
  try {
    const u = new URL(selfHref);
    const i = u.pathname.lastIndexOf('/Patient');
    if (i < 0) return null;
    const base = new URL(u.origin);
    base.pathname = u.pathname.slice(0, i);
    return base;
  } catch {
    return null;
  }
}

/**
 * Maps a next link onto FHIR_BASE_URL (HAPI's IServerAddressStrategy names its internal base: treat `link.next` as opaque
 * but allow re-basing). A link already under the base is kept; a link under
 * the server's self-declared base (its internal address) is re-based; any
 * other origin or path is refused.
 * @throws ERR_API_FHIR_FOREIGN_LINK
 */
export function rebaseNextLink(next: string, base: URL, serverBase: URL | null): URL {
  let u: URL;
  try {
    u = new URL(next, `${base.href}/`);
  } catch {
    throw new HospitalApiError('ERR_API_FHIR_BAD_RESPONSE', { detail: 'next link is not a URL' });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new HospitalApiError('ERR_API_FHIR_FOREIGN_LINK', { origin: u.protocol });
  }
  if (isUnderBase(u, base)) return u;
  if (serverBase && u.origin === serverBase.origin) {
    const sb = pathOf(serverBase);
    if (isUnderPath(u.pathname, sb)) {
      const rebased = new URL(base.href);
      rebased.pathname = pathOf(base) + u.pathname.slice(sb.length);
      rebased.search = u.search;
      return rebased;
    }
  }
  throw new HospitalApiError('ERR_API_FHIR_FOREIGN_LINK', { origin: u.origin });
}

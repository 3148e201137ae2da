/**
 * Which request targets the FHIR door forwards, and which of them it opens to callers without the token.
 *
 * Only the origin form (RFC 9112 §3.2.1: an absolute path and an optional query) is accepted: the
 * absolute form (`GET http://evil.example/fhir/Patient`, RFC 9112 §3.2.2) and the asterisk and authority
 * forms are refused, so nothing in a request chooses where the door connects. The path must be /fhir
 * or below it, and no segment may be `.` or `..`, percent-encoded or not (RFC 3986 §5.2.4 would
 * resolve them and leave /fhir), nor hold an encoded slash or a backslash, which some servers treat
 * as a separator.
 */
import { HospitalApiError } from '../errors/index.js';

/** The one route every local account may read: check 4.5.2 and `status` read the CapabilityStatement here. */
export const OPEN_PATH = '/fhir/metadata';

export interface DoorTarget {
  /** The path and query exactly as received, forwarded unchanged. */
  raw: string;
  path: string;
}

function refuse(detail: string): never {
  throw new HospitalApiError('ERR_FHIR_DOOR_BAD_TARGET', { detail });
}

/** @throws ERR_FHIR_DOOR_BAD_TARGET */
export function parseTarget(url: string | undefined): DoorTarget {
  if (!url || !url.startsWith('/') || url.startsWith('//')) refuse('only an origin-form target (a path starting with one /) is forwarded');
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path.includes('\\') || path.includes('#')) refuse('the path holds a backslash or a fragment');
  for (const segment of path.split('/').slice(1)) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      refuse('the path holds a malformed percent-encoding');
    }
    if (decoded === '.' || decoded === '..') refuse('the path holds a "." or ".." segment');
    if (decoded.includes('/') || decoded.includes('\\')) refuse('the path holds an encoded slash or backslash');
  }
  if (path !== '/fhir' && !path.startsWith('/fhir/')) refuse('only /fhir and the paths below it are forwarded');
  return { raw: url, path };
}

/** True for the requests anyone may make without the token: GET or HEAD of /fhir/metadata. */
export function isOpen(method: string | undefined, target: DoorTarget): boolean {
  return (method === 'GET' || method === 'HEAD') && target.path === OPEN_PATH;
}

/** The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), or null. */
export function bearerToken(header: string | undefined): string | null {
  if (typeof header !== 'string') return null;
  const space = header.indexOf(' ');
  if (space < 0 || header.slice(0, space).toLowerCase() !== 'bearer') return null;
  const token = header.slice(space + 1).trim();
  return token === '' ? null : token;
}

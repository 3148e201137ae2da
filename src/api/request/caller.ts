/** What the API knows of its caller: the ALLOWED_CALLERS check shared by /api/patients and /api/ready, and the caller's own request id. */
import { isIP, type BlockList } from 'node:net';

/** `list` null allows every caller. IPv4-mapped IPv6 callers (::ffff:10.0.0.1) are matched as IPv4. */
export function callerAllowed(list: BlockList | null, ip: string): boolean {
  if (list === null) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const addr = mapped ? (mapped[1] as string) : ip;
  const family = isIP(addr);
  return family !== 0 && list.check(addr, family === 4 ? 'ipv4' : 'ipv6');
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * The caller's X-Request-Id when it is 1–64 of `A-Za-z0-9._:-`, else null. It is
 * recorded beside the request's own id, never as it: a caller must not choose
 * (or repeat) the id an audit line is found by.
 */
export function callerRequestId(headers: Record<string, string | string[] | undefined>): string | null {
  const given = headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : null;
}

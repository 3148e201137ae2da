/** The ALLOWED_CALLERS check shared by /api/patients and /api/ready. */
import { isIP, type BlockList } from 'node:net';

/** `list` null allows every caller. IPv4-mapped IPv6 callers (::ffff:10.0.0.1) are matched as IPv4. */
export function callerAllowed(list: BlockList | null, ip: string): boolean {
  if (list === null) return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const addr = mapped ? (mapped[1] as string) : ip;
  const family = isIP(addr);
  return family !== 0 && list.check(addr, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Kong's `trusted_ips` (kong.conf.default; kong/templates/nginx_kong.lua
 * `set_real_ip_from`, kong/runloop/handler.lua X-Forwarded-* handling): from a
 * trusted peer, the client-supplied X-Forwarded-Proto/-Host/-Port/-Path/
 * -Prefix are passed on as sent and X-Real-IP (Kong's default
 * real_ip_header, real_ip_recursive off) names the client; from any other
 * peer those headers are replaced with what the gateway saw. Default: no
 * peer is trusted.
 */
import { isIP, type BlockList } from 'node:net';
import { blockListOf, parseIpOrCidr, type IpRange } from '../../util/ip-list.js';

export type TrustedIps = BlockList | null;

/** Parses `--trusted-ips` (comma-separated IPs and CIDRs; '' or 'off' = none). @throws Error naming the bad entry */
export function parseTrustedIps(value: string | undefined): TrustedIps {
  if (value === undefined || value.trim() === '' || value.trim() === 'off') return null;
  const ranges: IpRange[] = [];
  for (const entry of value.split(',').map((s) => s.trim()).filter(Boolean)) {
    const r = parseIpOrCidr(entry);
    if (!r) throw new Error(`"${entry}" is not an IP address or CIDR range`);
    ranges.push(r);
  }
  return blockListOf(ranges);
}

export function isTrusted(list: TrustedIps, ip: string): boolean {
  if (list === null) return false;
  const family = isIP(ip);
  return family !== 0 && list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
}

/** The client address a trusted peer names in X-Real-IP, when it is an IP address. */
export function realIp(header: string | undefined): string | null {
  if (header === undefined) return null;
  const v = header.trim();
  return isIP(v) !== 0 ? v : null;
}

/**
 * IP addresses and CIDR ranges as configuration gives them (ALLOWED_CALLERS,
 * TRUST_PROXY, the ip-restriction plugin), matched with node:net's BlockList.
 */
import { BlockList, isIP } from 'node:net';

export interface IpRange {
  ip: string;
  family: 4 | 6;
  prefix: number;
}

/** Parses `ip` or `ip/prefix`; null when it is neither. */
export function parseIpOrCidr(value: string): IpRange | null {
  const slash = value.indexOf('/');
  const ip = slash < 0 ? value : value.slice(0, slash);
  const family = isIP(ip);
  if (family !== 4 && family !== 6) return null;
  const max = family === 4 ? 32 : 128;
  if (slash < 0) return { ip, family, prefix: max };
  const text = value.slice(slash + 1);
  if (!/^\d{1,3}$/.test(text) || Number(text) > max) return null;
  return { ip, family, prefix: Number(text) };
}

/** One BlockList holding every range. */
export function blockListOf(ranges: Iterable<IpRange>): BlockList {
  const list = new BlockList();
  for (const r of ranges) list.addSubnet(r.ip, r.prefix, r.family === 4 ? 'ipv4' : 'ipv6');
  return list;
}

/**
 * An IPv6 address in WHATWG's canonical form (lower case, compressed: `0:0::1` → `::1`), as browsers
 * write it in a Host header; an address it cannot parse (one with a zone id) is kept as written.
 */
export function canonicalIpv6(ip: string): string {
  try {
    return new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  } catch {
    return ip;
  }
}

/** The range of exactly one address: `ip/32` or `ip/128`. */
export function singleAddressRange(ip: string): string {
  return `${ip}/${isIP(ip) === 6 ? 128 : 32}`;
}

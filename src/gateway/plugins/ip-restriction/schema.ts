/** ip-restriction config (kong.md §2): allow and/or deny lists of IPs or CIDRs. */
import { isIP } from 'node:net';
import { defineSchema } from '../schema-kit.js';
import { KONG_VERSION } from '../version.js';

export interface IpRestrictionConfig {
  allow: string[] | null;
  deny: string[] | null;
  status: number | null;
  message: string | null;
}

/** Parses `ip` or `ip/prefix`; null when invalid. */
export function parseIpOrCidr(value: string): { ip: string; family: 4 | 6; prefix: number } | null {
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

const ipOrCidr = (v: string): string | null => (parseIpOrCidr(v) ? null : `invalid ip or cidr range: '${v}'`);

export const ipRestrictionSchema = defineSchema({
  name: 'ip-restriction',
  version: KONG_VERSION,
  priority: 990,
  consumerScopable: true,
  fields: {
    allow: { type: 'array', elementCheck: ipOrCidr },
    deny: { type: 'array', elementCheck: ipOrCidr },
    status: { type: 'number' },
    message: { type: 'string' },
  },
  entityChecks: [{ atLeastOneOf: ['allow', 'deny'] }],
});

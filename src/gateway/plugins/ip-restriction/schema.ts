/** ip-restriction config (Kong's kong/plugins/ip-restriction/schema.lua): allow and/or deny lists of IPs or CIDRs. */
import { parseIpOrCidr } from '../../../util/ip-list.js';
import { defineSchema } from '../schema-kit.js';
import { KONG_VERSION } from '../version.js';

export interface IpRestrictionConfig {
  allow: string[] | null;
  deny: string[] | null;
  status: number | null;
  message: string | null;
}

const ipOrCidr = (v: string): string | null => (parseIpOrCidr(v) ? null : `invalid ip or cidr range: '${v}'`);

export const ipRestrictionSchema = defineSchema({
  name: 'ip-restriction',
  version: KONG_VERSION,
  priority: 990 /* Kong's kong/plugins/ip-restriction/handler.lua PRIORITY */,
  consumerScopable: true,
  fields: {
    allow: { type: 'array', elementCheck: ipOrCidr },
    deny: { type: 'array', elementCheck: ipOrCidr },
    status: { type: 'number' },
    message: { type: 'string' },
  },
  entityChecks: [{ atLeastOneOf: ['allow', 'deny'] }],
});

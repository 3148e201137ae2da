/** acl config (Kong's kong/plugins/acl/schema.lua): exactly one of allow/deny. */
import { defineSchema } from '../schema-kit.js';
import { KONG_VERSION } from '../version.js';

export interface AclConfig {
  allow: string[] | null;
  deny: string[] | null;
  hide_groups_header: boolean;
  include_consumer_groups: boolean;
}

export const aclSchema = defineSchema({
  name: 'acl',
  version: KONG_VERSION,
  priority: 950 /* Kong's kong/plugins/acl/handler.lua PRIORITY */,
  consumerScopable: false,
  fields: {
    allow: { type: 'array' },
    deny: { type: 'array' },
    hide_groups_header: { type: 'boolean', required: true, default: false },
    include_consumer_groups: { type: 'boolean', default: false },
  },
  entityChecks: [{ onlyOneOf: ['allow', 'deny'] }, { atLeastOneOf: ['allow', 'deny'] }],
});

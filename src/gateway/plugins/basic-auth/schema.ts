/** basic-auth config: Kong 3.6+ defaults (realm "service"), kong/plugins/basic-auth/schema.lua. */
import { defineSchema } from '../schema-kit.js';
import { KONG_VERSION } from '../version.js';

export interface BasicAuthConfig {
  anonymous: string | null;
  hide_credentials: boolean;
  realm: string;
}

export const basicAuthSchema = defineSchema({
  name: 'basic-auth',
  version: KONG_VERSION,
  priority: 1100 /* Kong's kong/plugins/basic-auth/handler.lua PRIORITY */,
  consumerScopable: false,
  fields: {
    anonymous: { type: 'string' },
    hide_credentials: { type: 'boolean', required: true, default: false },
    realm: { type: 'string', required: true, default: 'service' },
  },
});

/** key-auth config: defaults as Kong 3.9 `kong/plugins/key-auth/schema.lua`. */
import { defineSchema } from '../schema-kit.js';
import { KONG_VERSION } from '../version.js';

export interface KeyAuthConfig {
  key_names: string[];
  hide_credentials: boolean;
  anonymous: string | null;
  key_in_header: boolean;
  key_in_query: boolean;
  key_in_body: boolean;
  run_on_preflight: boolean;
  realm: string | null;
}

const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

export const keyAuthSchema = defineSchema({
  name: 'key-auth',
  version: KONG_VERSION,
  priority: 1250 /* Kong's kong/plugins/key-auth/handler.lua PRIORITY */,
  consumerScopable: false,
  fields: {
    key_names: {
      type: 'array',
      required: true,
      default: ['apikey'],
      elementCheck: (v) => (HEADER_NAME.test(v) ? null : 'bad header name, allowed characters are A-Z, a-z, 0-9, ' + "'_', and '-'"),
    },
    hide_credentials: { type: 'boolean', required: true, default: false },
    anonymous: { type: 'string' },
    key_in_header: { type: 'boolean', required: true, default: true },
    key_in_query: { type: 'boolean', required: true, default: true },
    key_in_body: { type: 'boolean', required: true, default: false },
    run_on_preflight: { type: 'boolean', required: true, default: true },
    realm: { type: 'string' },
  },
});

/** request-size-limiting config (Kong's kong/plugins/request-size-limiting/schema.lua): 128 megabytes by default, 1 MB = 1048576 bytes. */
import { defineSchema } from '../schema-kit.js';
import { KONG_VERSION } from '../version.js';

export interface RequestSizeLimitingConfig {
  allowed_payload_size: number;
  size_unit: 'megabytes' | 'kilobytes' | 'bytes';
  require_content_length: boolean;
}

export const requestSizeLimitingSchema = defineSchema({
  name: 'request-size-limiting',
  version: KONG_VERSION,
  priority: 951 /* Kong's kong/plugins/request-size-limiting/handler.lua PRIORITY */,
  consumerScopable: true,
  fields: {
    allowed_payload_size: { type: 'integer', required: true, default: 128 },
    size_unit: { type: 'string', required: true, default: 'megabytes', oneOf: ['megabytes', 'kilobytes', 'bytes'] },
    require_content_length: { type: 'boolean', required: true, default: false },
  },
});

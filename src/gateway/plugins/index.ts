/**
 * The plugins this gateway ships, by Kong name (Kong's kong/plugins/<name>/). The admin API
 * validates plugin configs with PLUGIN_SCHEMAS; the proxy runs PLUGIN_HANDLERS.
 * `validate` returns flat field errors keyed like Kong's paths
 * (`config.minute`); config-level checks are under `config.@entity`.
 */
import type { PluginSchemaDefinition } from '../model/types.js';
import { aclSchema } from './acl/schema.js';
import { basicAuthSchema } from './basic-auth/schema.js';
import { corsSchema } from './cors/schema.js';
import { ipRestrictionSchema } from './ip-restriction/schema.js';
import { keyAuthSchema } from './key-auth/schema.js';
import { prometheusSchema } from './prometheus/schema.js';
import { rateLimitingSchema } from './rate-limiting/schema.js';
import { requestSizeLimitingSchema } from './request-size-limiting/schema.js';

const ordered = [
  corsSchema,
  keyAuthSchema,
  basicAuthSchema,
  ipRestrictionSchema,
  requestSizeLimitingSchema,
  aclSchema,
  rateLimitingSchema,
  prometheusSchema,
].sort((a, b) => b.priority - a.priority || a.name.localeCompare(b.name));

/** Highest priority first, ties by name, as Kong's loader sorts them. */
export const PLUGIN_SCHEMAS: ReadonlyMap<string, PluginSchemaDefinition> = new Map(ordered.map((s) => [s.name, s]));

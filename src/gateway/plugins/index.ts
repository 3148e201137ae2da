/**
 * The plugins this gateway ships, one folder each (Kong's kong/plugins/<name>/), listed once here as
 * Kong's kong/constants.lua lists its bundled plugins. Each folder's index.ts declares its schema
 * (name, priority, defaults, validation) and its handler; nothing else names a plugin. The admin API
 * validates plugin configs with PLUGIN_SCHEMAS; the proxy runs PLUGIN_HANDLERS in priority order.
 * `validate` returns flat field errors keyed like Kong's paths (`config.minute`); config-level checks
 * are under `config.@entity`.
 */
import type { PluginSchemaDefinition } from '../model/types.js';
import { plugin as acl } from './acl/index.js';
import { plugin as basicAuth } from './basic-auth/index.js';
import { plugin as cors } from './cors/index.js';
import { plugin as ipRestriction } from './ip-restriction/index.js';
import { plugin as keyAuth } from './key-auth/index.js';
import { plugin as prometheus } from './prometheus/index.js';
import { plugin as rateLimiting } from './rate-limiting/index.js';
import { plugin as requestSizeLimiting } from './request-size-limiting/index.js';
import type { BundledPlugin, PluginHandler } from './types.js';

/** Highest priority first, ties by name, as Kong's loader sorts them. */
export const BUNDLED_PLUGINS: readonly BundledPlugin[] = Object.freeze(
  [cors, keyAuth, basicAuth, ipRestriction, requestSizeLimiting, acl, rateLimiting, prometheus].sort(
    (a, b) => b.schema.priority - a.schema.priority || a.schema.name.localeCompare(b.schema.name),
  ),
);

for (const p of BUNDLED_PLUGINS) {
  if (p.schema.name !== p.handler.name) throw new Error(`plugin folder ${p.schema.name}: its handler is named ${p.handler.name}`);
}

export const PLUGIN_SCHEMAS: ReadonlyMap<string, PluginSchemaDefinition> = new Map(BUNDLED_PLUGINS.map((p) => [p.schema.name, p.schema]));
export const PLUGIN_HANDLERS: ReadonlyMap<string, PluginHandler> = new Map(BUNDLED_PLUGINS.map((p) => [p.handler.name, p.handler]));

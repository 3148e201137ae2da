/** The proxy side of each plugin, by Kong name (schemas are in index.ts). */
import { aclHandler } from './acl/handler.js';
import { basicAuthHandler } from './basic-auth/handler.js';
import { corsHandler } from './cors/handler.js';
import { ipRestrictionHandler } from './ip-restriction/handler.js';
import { keyAuthHandler } from './key-auth/handler.js';
import { prometheusHandler } from './prometheus/handler.js';
import { rateLimitingHandler } from './rate-limiting/handler.js';
import { requestSizeLimitingHandler } from './request-size-limiting/handler.js';
import type { PluginHandler } from './types.js';

export const PLUGIN_HANDLERS: ReadonlyMap<string, PluginHandler> = new Map(
  [corsHandler, keyAuthHandler, basicAuthHandler, ipRestrictionHandler, requestSizeLimitingHandler, aclHandler, rateLimitingHandler, prometheusHandler].map(
    (h) => [h.name, h],
  ),
);

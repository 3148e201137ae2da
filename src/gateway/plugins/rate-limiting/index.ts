/** The rate-limiting plugin (Kong's kong/plugins/rate-limiting/): its schema (with its priority) and its handler, declared here only. */
import type { BundledPlugin } from '../types.js';
import { rateLimitingHandler } from './handler.js';
import { rateLimitingSchema } from './schema.js';

export const plugin: BundledPlugin = { schema: rateLimitingSchema, handler: rateLimitingHandler };

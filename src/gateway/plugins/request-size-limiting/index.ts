/** The request-size-limiting plugin (Kong's kong/plugins/request-size-limiting/): its schema (with its priority) and its handler, declared here only. */
import type { BundledPlugin } from '../types.js';
import { requestSizeLimitingHandler } from './handler.js';
import { requestSizeLimitingSchema } from './schema.js';

export const plugin: BundledPlugin = { schema: requestSizeLimitingSchema, handler: requestSizeLimitingHandler };

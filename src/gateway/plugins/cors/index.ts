/** The cors plugin (Kong's kong/plugins/cors/): its schema (with its priority) and its handler, declared here only. */
import type { BundledPlugin } from '../types.js';
import { corsHandler } from './handler.js';
import { corsSchema } from './schema.js';

export const plugin: BundledPlugin = { schema: corsSchema, handler: corsHandler };

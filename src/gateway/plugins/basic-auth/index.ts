/** The basic-auth plugin (Kong's kong/plugins/basic-auth/): its schema (with its priority) and its handler, declared here only. */
import type { BundledPlugin } from '../types.js';
import { basicAuthHandler } from './handler.js';
import { basicAuthSchema } from './schema.js';

export const plugin: BundledPlugin = { schema: basicAuthSchema, handler: basicAuthHandler };

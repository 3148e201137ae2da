/** The key-auth plugin (Kong's kong/plugins/key-auth/): its schema (with its priority) and its handler, declared here only. */
import type { BundledPlugin } from '../types.js';
import { keyAuthHandler } from './handler.js';
import { keyAuthSchema } from './schema.js';

export const plugin: BundledPlugin = { schema: keyAuthSchema, handler: keyAuthHandler };

/** The acl plugin (Kong's kong/plugins/acl/): its schema (with its priority) and its handler, declared here only. */
import type { BundledPlugin } from '../types.js';
import { aclHandler } from './handler.js';
import { aclSchema } from './schema.js';

export const plugin: BundledPlugin = { schema: aclSchema, handler: aclHandler };

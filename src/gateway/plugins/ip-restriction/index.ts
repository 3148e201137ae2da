/** The ip-restriction plugin (Kong's kong/plugins/ip-restriction/): its schema (with its priority) and its handler, declared here only. */
import type { BundledPlugin } from '../types.js';
import { ipRestrictionHandler } from './handler.js';
import { ipRestrictionSchema } from './schema.js';

export const plugin: BundledPlugin = { schema: ipRestrictionSchema, handler: ipRestrictionHandler };

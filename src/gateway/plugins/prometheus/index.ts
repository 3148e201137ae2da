/** The prometheus plugin (Kong's kong/plugins/prometheus/): its schema (with its priority) and its handler, declared here only. */
import type { BundledPlugin } from '../types.js';
import { prometheusHandler } from './handler.js';
import { prometheusSchema } from './schema.js';

export const plugin: BundledPlugin = { schema: prometheusSchema, handler: prometheusHandler };

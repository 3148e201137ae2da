/**
 * rate-limiting config (Kong's kong/plugins/rate-limiting/schema.lua), local policy only: `cluster` and `redis`
 * need a shared store this gateway does not have, so they are rejected rather
 * than silently run per node.
 */
import { defineSchema } from '../schema-kit.js';
import { KONG_VERSION } from '../version.js';

export const PERIODS = ['second', 'minute', 'hour', 'day', 'month', 'year'] as const;
export type Period = (typeof PERIODS)[number];

export interface RateLimitingConfig extends Record<Period, number | null> {
  limit_by: 'consumer' | 'credential' | 'ip' | 'service' | 'header' | 'path';
  header_name: string | null;
  path: string | null;
  policy: 'local';
  fault_tolerant: boolean;
  hide_client_headers: boolean;
  error_code: number;
  error_message: string;
  sync_rate: number;
}

/** Kong's rate-limiting schema: a longer window may not have a lower limit. */
function periodsInOrder(config: Record<string, unknown>): string | null {
  for (let i = 0; i < PERIODS.length; i++) {
    const lower = config[PERIODS[i] as Period] as number | null;
    if (lower === null) continue;
    for (let j = i + 1; j < PERIODS.length; j++) {
      const upper = config[PERIODS[j] as Period] as number | null;
      if (upper !== null && upper < lower) {
        return `The limit for ${PERIODS[j]}(${upper.toFixed(1)}) cannot be lower than the limit for ${PERIODS[i]}(${lower.toFixed(1)})`;
      }
    }
  }
  return null;
}

function limitByNeeds(config: Record<string, unknown>): string | null {
  if (config.limit_by === 'header' && config.header_name === null) return "failed conditional validation given value of field 'config.limit_by'";
  if (config.limit_by === 'path' && config.path === null) return "failed conditional validation given value of field 'config.limit_by'";
  return null;
}

const window = { type: 'number', gt: 0 } as const;

export const rateLimitingSchema = defineSchema({
  name: 'rate-limiting',
  version: KONG_VERSION,
  priority: 910 /* Kong's kong/plugins/rate-limiting/handler.lua PRIORITY */,
  consumerScopable: true,
  fields: {
    second: window,
    minute: window,
    hour: window,
    day: window,
    month: window,
    year: window,
    limit_by: { type: 'string', default: 'consumer', oneOf: ['consumer', 'credential', 'ip', 'service', 'header', 'path'] },
    header_name: { type: 'string' },
    path: { type: 'string' },
    policy: { type: 'string', default: 'local', oneOf: ['local'] },
    fault_tolerant: { type: 'boolean', required: true, default: true },
    hide_client_headers: { type: 'boolean', required: true, default: false },
    error_code: { type: 'number', default: 429, gt: 0 },
    error_message: { type: 'string', default: 'API rate limit exceeded' },
    sync_rate: { type: 'number', default: -1 },
  },
  entityChecks: [{ atLeastOneOf: PERIODS }, { custom: periodsInOrder }, { custom: limitByNeeds }],
});

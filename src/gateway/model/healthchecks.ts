/**
 * An upstream's `healthchecks` record with Kong's defaults and checks
 * (kong/db/schema/entities/upstreams.lua, healthchecks_config and its types).
 * Input is merged onto the defaults (or onto the stored value for PATCH);
 * unknown keys and wrong types are reported as Kong field errors under
 * `healthchecks.…`.
 */
import type { UpstreamHealthchecks } from './types.js';
import type { FlatErrors } from './kong-error.js';

export function defaultHealthchecks(): UpstreamHealthchecks {
  return {
    threshold: 0,
    active: {
      type: 'http',
      timeout: 1,
      concurrency: 10,
      http_path: '/',
      https_sni: null,
      https_verify_certificate: true,
      headers: null,
      healthy: { interval: 0, http_statuses: [200, 302], successes: 0 },
      unhealthy: { interval: 0, http_statuses: [429, 404, 500, 501, 502, 503, 504, 505], tcp_failures: 0, timeouts: 0, http_failures: 0 },
    },
    passive: {
      type: 'http',
      healthy: { http_statuses: [200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 306, 307, 308], successes: 0 },
      unhealthy: { http_statuses: [429, 500, 503], tcp_failures: 0, timeouts: 0, http_failures: 0 },
    },
  };
}

type Check = (v: unknown) => string | null;
const number = (lo: number, hi: number): Check => (v) =>
  typeof v !== 'number' || !Number.isFinite(v) ? 'expected a number' : v < lo || v > hi ? `value should be between ${lo} and ${hi}` : null;
const integer = (lo: number, hi: number): Check => (v) =>
  typeof v !== 'number' || !Number.isInteger(v) ? 'expected an integer' : v < lo || v > hi ? `value should be between ${lo} and ${hi}` : null;
const CHECK_TYPES = ['tcp', 'http', 'https', 'grpc', 'grpcs'];
const checkType: Check = (v) => (typeof v === 'string' && CHECK_TYPES.includes(v) ? null : `expected one of: ${CHECK_TYPES.join(', ')}`);
const statuses: Check = (v) => {
  if (!Array.isArray(v)) return 'expected an array';
  return v.every((s) => Number.isInteger(s) && s >= 100 && s <= 999) ? null : 'value should be between 100 and 999';
};
const bool: Check = (v) => (typeof v === 'boolean' ? null : 'expected a boolean');
const path: Check = (v) => (typeof v === 'string' && v.startsWith('/') && v.length <= 1000 ? null : 'should start with: /');
const optionalString: Check = (v) => (v === null || (typeof v === 'string' && v.length > 0 && v.length <= 255) ? null : 'expected a string');
const headers: Check = (v) => {
  if (v === null) return null;
  if (typeof v !== 'object' || Array.isArray(v)) return 'expected a map';
  return Object.values(v).every((x) => Array.isArray(x) && x.every((s) => typeof s === 'string')) ? null : 'expected an array of strings';
};

const seconds = number(0, 65535);
const byte = integer(0, 255);
type Shape = { [k: string]: Check | Shape };
const SHAPE: Shape = {
  threshold: number(0, 100),
  active: {
    type: checkType,
    timeout: seconds,
    concurrency: integer(1, 2 ** 31),
    http_path: path,
    https_sni: optionalString,
    https_verify_certificate: bool,
    headers,
    healthy: { interval: seconds, http_statuses: statuses, successes: byte },
    unhealthy: { interval: seconds, http_statuses: statuses, tcp_failures: byte, timeouts: byte, http_failures: byte },
  },
  passive: {
    type: checkType,
    healthy: { http_statuses: statuses, successes: byte },
    unhealthy: { http_statuses: statuses, tcp_failures: byte, timeouts: byte, http_failures: byte },
  },
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Form input arrives as strings: "5" → 5, "true" → true, one value → [value] for status lists. */
function coerceLeaf(key: string, v: unknown): unknown {
  if (typeof v !== 'string') return v;
  if (key === 'http_statuses') return [Number(v)];
  if (v === 'true' || v === 'false') return v === 'true';
  if (v !== '' && !Number.isNaN(Number(v)) && key !== 'http_path' && key !== 'https_sni' && key !== 'type') return Number(v);
  return v;
}

function merge(shape: Shape, base: Record<string, unknown>, input: Record<string, unknown>, prefix: string, errors: FlatErrors, coerce: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, raw] of Object.entries(input)) {
    const spec = Object.hasOwn(shape, k) ? shape[k] : undefined;
    const at = `${prefix}.${k}`;
    if (spec === undefined) {
      errors[at] = 'unknown field';
      continue;
    }
    if (typeof spec === 'function') {
      let v = coerce ? coerceLeaf(k, raw) : raw;
      if (k === 'http_statuses' && Array.isArray(v) && coerce) v = v.map((x) => (typeof x === 'string' ? Number(x) : x));
      const msg = spec(v);
      if (msg) errors[at] = msg;
      else out[k] = v;
    } else if (raw === null) {
      out[k] = base[k];
    } else if (!isRecord(raw)) {
      errors[at] = 'expected a record';
    } else {
      out[k] = merge(spec, isRecord(base[k]) ? base[k] : {}, raw, at, errors, coerce);
    }
  }
  return out;
}

/** Merges `input` onto `base` (Kong's defaults unless given), checking every value. */
export function normalizeHealthchecks(input: unknown, errors: FlatErrors, coerce: boolean, base: UpstreamHealthchecks = defaultHealthchecks()): UpstreamHealthchecks {
  if (input === null || input === undefined) return base;
  if (!isRecord(input)) {
    errors.healthchecks = 'expected a record';
    return base;
  }
  return merge(SHAPE, base as unknown as Record<string, unknown>, input, 'healthchecks', errors, coerce) as unknown as UpstreamHealthchecks;
}

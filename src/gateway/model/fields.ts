/**
 * The one field validator of the gateway, with Kong's messages
 * (kong/db/schema/init.lua): "required field missing", "unknown field",
 * "expected an integer", … Core entities declare FieldSpecs and call
 * validateFields; plugin config schemas (plugins/schema-kit.ts) check each of
 * their fields with the same checkValue and coerceValue (issue 44: the two
 * validators had drifted apart). Form-encoded input arrives as strings, so
 * coercion turns "80" into 80 and "true" into true (Kong does the same).
 */
import type { FlatErrors } from './kong-error.js';

export type FieldSpec =
  | {
      type: 'string';
      default?: string | null;
      required?: boolean;
      oneOf?: readonly string[];
      check?: (v: string) => string | null;
      /** Longest accepted value in characters (default MAX_STRING). */
      max?: number;
    }
  | { type: 'integer'; default?: number | null; required?: boolean; gt?: number; between?: readonly [number, number]; oneOf?: readonly number[] }
  | { type: 'number'; default?: number | null; required?: boolean; gt?: number; between?: readonly [number, number] }
  | { type: 'boolean'; default?: boolean | null; required?: boolean }
  | {
      type: 'set';
      default?: readonly string[] | null;
      required?: boolean;
      oneOf?: readonly string[];
      check?: (v: string) => string | null;
      /** Kong stores some sets upper-cased, e.g. route methods. */
      upper?: boolean;
      /** Longest accepted element (default MAX_STRING). */
      max?: number;
    }
  | {
      // a plugin config's array of strings: kept in order, repeats kept (a `set` drops them)
      type: 'array';
      default?: readonly string[] | null;
      required?: boolean;
      oneOf?: readonly string[];
      check?: (v: string) => string | null;
      /** Longest accepted element (default: no limit). */
      max?: number;
    }
  | { type: 'map'; required?: boolean } // route headers: name → string[]
  | { type: 'json-array'; required?: boolean } // sources / destinations: kept as given
  | { type: 'foreign'; required?: boolean } // { id } / { name } / { username }, resolved by the store
  | { type: 'uuid-array'; required?: boolean }
  | { type: 'record'; required?: boolean }; // plugin config: validated by the plugin's schema

export type FieldSpecs = Readonly<Record<string, FieldSpec>>;

/**
 * Longest string a field takes unless its spec says otherwise. Kong's schemas
 * set no length on names, but Kong on PostgreSQL cannot index a unique value
 * over 2,704 bytes (a 100,000-character name fails there with a 500); we
 * refuse long values up front with Kong's own len_max message (issue 12).
 */
export const MAX_STRING = 1000;
/** Most elements a set (tags, hosts, paths, …) takes. */
export const MAX_SET = 1000;

const tooLong = (max: number): string => `length must be at most ${max}`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/** A form-encoded string as the field's type reads it; anything else unchanged. */
export function coerceValue(spec: FieldSpec, value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if (spec.type === 'integer' && /^-?\d+$/.test(value)) return Number(value);
  if (spec.type === 'number' && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  if (spec.type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  if ((spec.type === 'set' || spec.type === 'uuid-array') && value !== '') return [value];
  if (spec.type === 'array') return [value];
  return value;
}

/** Kong's bounds on a number: gt (exclusive), then between (inclusive). */
function boundsError(spec: { gt?: number; between?: readonly [number, number] }, value: number): string | null {
  if (spec.gt !== undefined && value <= spec.gt) return `value must be greater than ${spec.gt}`;
  if (spec.between && (value < spec.between[0] || value > spec.between[1])) return `value should be between ${spec.between[0]} and ${spec.between[1]}`;
  return null;
}

/** Checks one present, non-null value; returns the stored value or an error message. */
export function checkValue(spec: FieldSpec, value: unknown): { value: unknown } | { error: string } {
  switch (spec.type) {
    case 'string': {
      if (typeof value !== 'string') return { error: 'expected a string' };
      if (value.length === 0) return { error: 'length must be at least 1' };
      if (value.length > (spec.max ?? MAX_STRING)) return { error: tooLong(spec.max ?? MAX_STRING) };
      if (spec.oneOf && !spec.oneOf.includes(value)) return { error: `expected one of: ${spec.oneOf.join(', ')}` };
      const msg = spec.check?.(value);
      return msg ? { error: msg } : { value };
    }
    case 'integer': {
      if (typeof value !== 'number' || !Number.isInteger(value)) return { error: 'expected an integer' };
      const bounds = boundsError(spec, value);
      if (bounds) return { error: bounds };
      if (spec.oneOf && !spec.oneOf.includes(value)) return { error: `expected one of: ${spec.oneOf.join(', ')}` };
      return { value };
    }
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return { error: 'expected a number' };
      const bounds = boundsError(spec, value);
      return bounds ? { error: bounds } : { value };
    }
    case 'array': {
      // no bound on the count or on an element unless the spec sets one (Kong's plugin arrays have none)
      if (!Array.isArray(value)) return { error: 'expected an array' };
      for (const el of value) {
        if (typeof el !== 'string') return { error: 'expected a string' };
        if (spec.max !== undefined && el.length > spec.max) return { error: tooLong(spec.max) };
        if (spec.oneOf && !spec.oneOf.includes(el)) return { error: `expected one of: ${spec.oneOf.join(', ')}` };
        const msg = spec.check?.(el);
        if (msg) return { error: msg };
      }
      return { value: [...value] };
    }
    case 'boolean':
      return typeof value === 'boolean' ? { value } : { error: 'expected a boolean' };
    case 'set': {
      if (!Array.isArray(value)) return { error: 'expected a set' };
      if (value.length > MAX_SET) return { error: `length must be at most ${MAX_SET}` };
      const out: string[] = [];
      for (const raw of value) {
        if (typeof raw !== 'string') return { error: 'expected a string' };
        if (raw.length === 0) return { error: 'length must be at least 1' };
        if (raw.length > (spec.max ?? MAX_STRING)) return { error: tooLong(spec.max ?? MAX_STRING) };
        const el = spec.upper ? raw.toUpperCase() : raw;
        if (spec.oneOf && !spec.oneOf.includes(el)) return { error: `expected one of: ${spec.oneOf.join(', ')}` };
        const msg = spec.check?.(el);
        if (msg) return { error: msg };
        if (!out.includes(el)) out.push(el);
      }
      return { value: out };
    }
    case 'uuid-array':
      if (!Array.isArray(value)) return { error: 'expected an array' };
      return value.every(isUuid) ? { value } : { error: 'expected a valid UUID' };
    case 'map':
      if (typeof value !== 'object' || Array.isArray(value)) return { error: 'expected a map' };
      for (const [k, v] of Object.entries(value as object)) {
        if (k.length > MAX_STRING) return { error: tooLong(MAX_STRING) };
        if (!(Array.isArray(v) ? v : [v]).every((x) => typeof x === 'string' && x.length <= MAX_STRING)) return { error: 'expected a string' };
      }
      return {
        value: Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v : [v]])),
      };
    case 'json-array':
      return Array.isArray(value) ? { value } : { error: 'expected an array' };
    case 'foreign':
    case 'record':
      return typeof value === 'object' && !Array.isArray(value) ? { value } : { error: 'expected a record' };
  }
}

export interface ValidateResult {
  value: Record<string, unknown>;
  errors: FlatErrors;
}

/**
 * Validates `input` against `specs`, filling defaults for absent fields.
 * `extra` names fields the caller handles itself (e.g. a service's `url`).
 */
export function validateFields(specs: FieldSpecs, input: Record<string, unknown>, coerce: boolean, extra: readonly string[] = []): ValidateResult {
  const value: Record<string, unknown> = {};
  const errors: FlatErrors = {};
  for (const key of Object.keys(input)) {
    if (!(key in specs) && !extra.includes(key)) errors[key] = 'unknown field';
  }
  for (const [name, spec] of Object.entries(specs)) {
    let raw = input[name];
    if (coerce) raw = coerceValue(spec, raw);
    if (raw === undefined || raw === null) {
      const def = 'default' in spec ? spec.default : undefined;
      const filled = def === undefined ? null : Array.isArray(def) ? [...def] : def;
      if (filled === null && spec.required) errors[name] = 'required field missing';
      value[name] = filled;
      continue;
    }
    const checked = checkValue(spec, raw);
    if ('error' in checked) errors[name] = checked.error;
    else value[name] = checked.value;
  }
  return { value, errors };
}

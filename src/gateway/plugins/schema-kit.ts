/**
 * A small declarative schema for plugin configs, shaped after Kong's
 * (kong/db/schema): each field has a type, a default and checks; rules across
 * fields are declared as entity checks. Messages are Kong's (kong/db/schema/init.lua).
 * Errors come back flat, keyed like Kong's field paths: `config.minute`;
 * config-level (entity) checks use `config.@entity`.
 */
import type { PluginSchemaDefinition } from '../model/types.js';

export type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'array';

export interface FieldDef {
  type: FieldType;
  /** Filled in when the field is absent (or null and required). Arrays are copied. */
  default?: unknown;
  required?: boolean;
  oneOf?: readonly string[];
  /** Array elements: allowed values. */
  elementsOneOf?: readonly string[];
  /** Array elements: a custom check returning an error message or null. */
  elementCheck?: (value: string) => string | null;
  gt?: number;
  between?: readonly [number, number];
}

export type EntityCheck =
  | { atLeastOneOf: readonly string[] }
  | { onlyOneOf: readonly string[] }
  | { custom: (config: Record<string, unknown>) => string | null };

export interface PluginSpec {
  name: string;
  version: string;
  priority: number;
  consumerScopable: boolean;
  fields: Readonly<Record<string, FieldDef>>;
  entityChecks?: readonly EntityCheck[];
}

const TYPE_MESSAGE: Record<FieldType, string> = {
  string: 'expected a string',
  integer: 'expected an integer',
  number: 'expected a number',
  boolean: 'expected a boolean',
  array: 'expected an array',
};

/** Form-encoded admin input arrives as strings; accept the obvious coercions. */
function coerce(def: FieldDef, value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if ((def.type === 'integer' || def.type === 'number') && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  if (def.type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  if (def.type === 'array') return [value];
  return value;
}

function checkField(def: FieldDef, value: unknown): string | null {
  switch (def.type) {
    case 'string':
      if (typeof value !== 'string') return TYPE_MESSAGE.string;
      if (value.length === 0) return 'length must be at least 1';
      break;
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) return TYPE_MESSAGE.integer;
      break;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return TYPE_MESSAGE.number;
      break;
    case 'boolean':
      if (typeof value !== 'boolean') return TYPE_MESSAGE.boolean;
      break;
    case 'array':
      if (!Array.isArray(value)) return TYPE_MESSAGE.array;
      for (const el of value) {
        if (typeof el !== 'string') return TYPE_MESSAGE.string;
        if (def.elementsOneOf && !def.elementsOneOf.includes(el)) return `expected one of: ${def.elementsOneOf.join(', ')}`;
        const msg = def.elementCheck?.(el);
        if (msg) return msg;
      }
      break;
  }
  if (def.oneOf && !def.oneOf.includes(value as string)) return `expected one of: ${def.oneOf.join(', ')}`;
  if (def.gt !== undefined && (value as number) <= def.gt) return `value must be greater than ${def.gt}`;
  if (def.between && ((value as number) < def.between[0] || (value as number) > def.between[1])) {
    return `value should be between ${def.between[0]} and ${def.between[1]}`;
  }
  return null;
}

function isEmpty(v: unknown): boolean {
  return v === null || v === undefined || (Array.isArray(v) && v.length === 0);
}

function quoted(fields: readonly string[]): string {
  return fields.map((f) => `'config.${f}'`).join(', ');
}

function runEntityCheck(check: EntityCheck, config: Record<string, unknown>): string | null {
  if ('atLeastOneOf' in check) {
    return check.atLeastOneOf.some((f) => !isEmpty(config[f]))
      ? null
      : `at least one of these fields must be non-empty: ${quoted(check.atLeastOneOf)}`;
  }
  if ('onlyOneOf' in check) {
    return check.onlyOneOf.filter((f) => !isEmpty(config[f])).length <= 1
      ? null
      : `only one of these fields must be non-empty: ${quoted(check.onlyOneOf)}`;
  }
  return check.custom(config);
}

/** Validates a config against a spec; fills defaults; never mutates its input. */
export function validateConfig(spec: PluginSpec, input: unknown): ReturnType<PluginSchemaDefinition['validate']> {
  const errors: Record<string, string> = {};
  if (input !== undefined && input !== null && (typeof input !== 'object' || Array.isArray(input))) {
    return { ok: false, errors: { config: 'expected a record' } };
  }
  const given = (input ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(given)) {
    if (!(key in spec.fields)) errors[`config.${key}`] = 'unknown field';
  }
  for (const [key, def] of Object.entries(spec.fields)) {
    let value = given[key];
    if (value === undefined || (value === null && def.default !== undefined)) {
      value = Array.isArray(def.default) ? [...(def.default as unknown[])] : (def.default ?? null);
    }
    if (value === null) {
      if (def.required) errors[`config.${key}`] = 'required field missing';
      out[key] = null;
      continue;
    }
    value = coerce(def, value);
    const msg = checkField(def, value);
    if (msg) errors[`config.${key}`] = msg;
    out[key] = value;
  }
  if (Object.keys(errors).length === 0) {
    for (const check of spec.entityChecks ?? []) {
      const msg = runEntityCheck(check, out);
      if (msg) {
        errors['config.@entity'] = msg;
        break;
      }
    }
  }
  return Object.keys(errors).length ? { ok: false, errors } : { ok: true, config: out };
}

export function defineSchema(spec: PluginSpec): PluginSchemaDefinition {
  return {
    name: spec.name,
    version: spec.version,
    priority: spec.priority,
    consumerScopable: spec.consumerScopable,
    validate: (config) => validateConfig(spec, config),
  };
}

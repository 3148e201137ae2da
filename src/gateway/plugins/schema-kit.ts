/**
 * A small declarative schema for plugin configs, shaped after Kong's
 * (kong/db/schema): each field has a type, a default and checks; rules across
 * fields are declared as entity checks. Each field is checked by the gateway's
 * one field validator (model/fields.ts), so messages are Kong's (kong/db/schema/init.lua)
 * and the same as the admin API's for core entities.
 * Errors come back flat, keyed like Kong's field paths: `config.minute`;
 * config-level (entity) checks use `config.@entity`.
 */
import type { PluginSchemaDefinition } from '../model/types.js';
import { checkValue, coerceValue, type FieldSpec } from '../model/fields.js';

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

/** A plugin field as the gateway's one field validator reads it (model/fields.ts): no length bound on strings, as Kong's plugin schemas set none. */
function specOf(def: FieldDef): FieldSpec {
  switch (def.type) {
    case 'string':
      return { type: 'string', max: Number.POSITIVE_INFINITY, ...(def.oneOf ? { oneOf: def.oneOf } : {}) };
    case 'integer':
      return { type: 'integer', ...(def.gt !== undefined ? { gt: def.gt } : {}), ...(def.between ? { between: def.between } : {}) };
    case 'number':
      return { type: 'number', ...(def.gt !== undefined ? { gt: def.gt } : {}), ...(def.between ? { between: def.between } : {}) };
    case 'boolean':
      return { type: 'boolean' };
    case 'array':
      return { type: 'array', ...(def.elementsOneOf ? { oneOf: def.elementsOneOf } : {}), ...(def.elementCheck ? { check: def.elementCheck } : {}) };
  }
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
    const spec = specOf(def);
    value = coerceValue(spec, value);
    const checked = checkValue(spec, value);
    if ('error' in checked) errors[`config.${key}`] = checked.error;
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

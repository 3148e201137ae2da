/**
 * Kong-shaped admin errors (Kong's kong/db/errors.lua; statuses in kong/api/endpoints.lua):
 * a HospitalApiError whose `body` is the exact wire body `{code,name,message,fields}`.
 */
import { HospitalApiError, type ErrorCode } from '../../errors/index.js';

/** Kong's error codes (kong/db/errors.lua). */
export const KONG_CODES = {
  SCHEMA_VIOLATION: 2,
  PRIMARY_KEY_VIOLATION: 3,
  FOREIGN_KEY_VIOLATION: 4,
  UNIQUE_VIOLATION: 5,
  INVALID_OFFSET: 7,
  INVALID_SIZE: 9,
  FOREIGN_KEYS_UNRESOLVED: 13,
  DECLARATIVE_CONFIG: 14,
} as const;

/** Flat field errors: `host`, `config.minute`, `@entity` (a list). */
export type FlatErrors = Record<string, string | string[]>;

export class KongError extends HospitalApiError {
  readonly body: Record<string, unknown>;
  /** `logDetail` replaces the wire message in the error's own message when the wire one holds a secret. */
  constructor(code: ErrorCode, body: Record<string, unknown>, logDetail?: string) {
    super(code, { detail: logDetail ?? (typeof body.message === 'string' ? body.message : '') });
    this.body = body;
  }
}

export function isKongError(err: unknown): err is KongError {
  return err instanceof KongError;
}

/** Lua's pl.pretty.write(t, "") for a flat table of strings: `{name="fhir"}`. */
export function luaPretty(t: Record<string, unknown>): string {
  const parts = Object.entries(t).map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : String(v)}`);
  return `{${parts.join(',')}}`;
}

/** Turns `config.minute` paths into nested objects, as Kong returns `fields`. */
export function nestFields(flat: FlatErrors): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [path, msg] of Object.entries(flat)) {
    const parts = path.split('.');
    let node = out;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      node = (typeof next === 'object' && next !== null && !Array.isArray(next) ? next : (node[part] = {})) as Record<string, unknown>;
    }
    node[parts[parts.length - 1] as string] = msg;
  }
  return out;
}

/** The "(a: …; b: …)" list: entity-level messages first, then fields sorted by path. */
function violationList(flat: FlatErrors): string[] {
  const buf: string[] = [];
  const entity = flat['@entity'];
  if (entity) buf.push(...(Array.isArray(entity) ? entity : [entity]));
  for (const path of Object.keys(flat).filter((k) => k !== '@entity').sort()) {
    const msg = flat[path] as string | string[];
    buf.push(`${path}: ${Array.isArray(msg) ? msg.join(', ') : msg}`);
  }
  return buf;
}

/** 400 code 2 `schema violation (host: required field missing)`. */
export function schemaViolation(flat: FlatErrors): KongError {
  const buf = violationList(flat);
  const message = buf.length === 1 ? `schema violation (${buf[0]})` : `${buf.length} schema violations (${buf.join('; ')})`;
  return new KongError('ERR_GATEWAY_ADMIN_SCHEMA', {
    code: KONG_CODES.SCHEMA_VIOLATION,
    name: 'schema violation',
    message,
    fields: nestFields(flat),
  });
}

/** 409 code 5 `UNIQUE violation detected on '{name="fhir"}'`. */
export function uniqueViolation(field: string, value: unknown): KongError {
  // Kong echoes the duplicate value; for an API key only the wire body (to the caller who sent it) carries it, never our logs.
  const logDetail = field === 'key' ? `UNIQUE violation detected on '{key=<redacted>}'` : undefined;
  return new KongError(
    'ERR_GATEWAY_ADMIN_UNIQUE',
    {
      code: KONG_CODES.UNIQUE_VIOLATION,
      name: 'unique constraint violation',
      message: `UNIQUE violation detected on '${luaPretty({ [field]: value })}'`,
      fields: { [field]: value },
    },
    logDetail,
  );
}

/** 409 for a caller-supplied id that already exists (Kong's spec/02-integration/04-admin_api/10-services_routes_spec.lua). */
export function primaryKeyViolation(id: string): KongError {
  return new KongError('ERR_GATEWAY_ADMIN_UNIQUE', {
    code: KONG_CODES.PRIMARY_KEY_VIOLATION,
    name: 'primary key violation',
    message: `primary key violation on key '${luaPretty({ id })}'`,
    fields: { id: `already exists with value '${id}'` },
  });
}

/** 400 code 4: `service.id` names no existing service. */
export function foreignKeyViolation(field: string, key: Record<string, unknown>, parent: string): KongError {
  return new KongError('ERR_GATEWAY_ADMIN_FOREIGN_KEY', {
    code: KONG_CODES.FOREIGN_KEY_VIOLATION,
    name: 'foreign key violation',
    message: `the foreign key '${luaPretty(key)}' does not reference an existing '${parent}' entity.`,
    fields: { [field]: key },
  });
}

/** 400 code 4: deleting a parent that children still reference (restrict). */
export function foreignKeyRestricted(parent: string, child: string): KongError {
  return new KongError('ERR_GATEWAY_ADMIN_FOREIGN_KEY', {
    code: KONG_CODES.FOREIGN_KEY_VIOLATION,
    name: 'foreign key violation',
    message: `an existing '${child}' entity references this '${parent}' entity`,
    fields: { '@referenced_by': child },
  });
}

/** 400 code 13: `service.name` (or consumer.username) resolves to nothing. */
export function foreignKeysUnresolved(field: string, keyName: string, value: unknown, parent: string): KongError {
  const msg = `the foreign key cannot be resolved with '${luaPretty({ [keyName]: value })}' for an existing '${parent}' entity`;
  return new KongError('ERR_GATEWAY_ADMIN_FOREIGN_KEY', {
    code: KONG_CODES.FOREIGN_KEYS_UNRESOLVED,
    name: 'foreign keys unresolved',
    message: `foreign key unresolved (${field}.${keyName}: ${msg})`,
    fields: { [field]: { [keyName]: msg } },
  });
}

export function notFound(): KongError {
  return new KongError('ERR_GATEWAY_ADMIN_NOT_FOUND', { message: 'Not found' });
}

export function methodNotAllowed(): KongError {
  return new KongError('ERR_GATEWAY_ADMIN_METHOD', { message: 'Method not allowed' });
}

export function badRequest(message: string): KongError {
  return new KongError('ERR_GATEWAY_ADMIN_BAD_REQUEST', { message });
}

export function invalidSize(): KongError {
  return new KongError('ERR_GATEWAY_ADMIN_BAD_REQUEST', {
    code: KONG_CODES.INVALID_SIZE,
    name: 'invalid size',
    message: 'size must be an integer between 1 and 1000',
  });
}

export function invalidOffset(offset: string): KongError {
  return new KongError('ERR_GATEWAY_ADMIN_BAD_REQUEST', {
    code: KONG_CODES.INVALID_OFFSET,
    name: 'invalid offset',
    message: `'${offset}' is not a valid offset: bad base64 encoding`,
  });
}

/** Entity lists come back as JSON arrays, null where an entry was valid (as Kong's cjson encodes them). */
function arraysFromIndexes(v: unknown): unknown {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > 0 && entries.every(([k]) => /^\d+$/.test(k))) {
    const arr: unknown[] = Array.from({ length: Math.max(...entries.map(([k]) => Number(k))) + 1 }, () => null);
    for (const [k, item] of entries) arr[Number(k)] = arraysFromIndexes(item);
    return arr;
  }
  return Object.fromEntries(entries.map(([k, item]) => [k, arraysFromIndexes(item)]));
}

/** Lua's pl.pretty.write(t, "") for nested error tables; arrays are 1-based `[n]=` as in Kong's message. */
function luaPrettyDeep(v: unknown): string {
  if (Array.isArray(v)) return `{${v.map((x, i) => (x === null ? null : `[${i + 1}]=${luaPrettyDeep(x)}`)).filter((x) => x !== null).join(',')}}`;
  if (typeof v === 'object' && v !== null) {
    const key = (k: string): string => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? k : `[${JSON.stringify(k)}]`);
    return `{${Object.entries(v).map(([k, x]) => `${key(k)}=${luaPrettyDeep(x)}`).join(',')}}`;
  }
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

/** 400 code 14 `declarative config is invalid: {…}` (Kong's kong/db/errors.lua declarative_config, kong/api/routes/config.lua). */
export function declarativeInvalid(flat: FlatErrors): KongError {
  const fields = arraysFromIndexes(nestFields(flat)) as Record<string, unknown>;
  return new KongError('ERR_GATEWAY_DECLARATIVE_INVALID', {
    code: KONG_CODES.DECLARATIVE_CONFIG,
    name: 'invalid declarative configuration',
    message: `declarative config is invalid: ${luaPrettyDeep(fields)}`,
    fields,
  });
}

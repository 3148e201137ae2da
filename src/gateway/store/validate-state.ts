/**
 * Schema check of a gateway state document `{format, version, config}` (issue
 * 12: one bad value in the state file took every route down while `status`
 * said up). Every entity is rebuilt through the admin API's own validation
 * (store/repo.ts, basic-auth passwords taken as stored hashes), in dependency
 * order, so a value the admin API would refuse, a dangling reference or a
 * duplicate is caught before the proxy ever sees it. Generated fields (a
 * key-auth key, a jwt secret) must be present: they are never made up on load.
 *
 * `loadSnapshotFromFile` calls this on every read: the gateway refuses to
 * start on an invalid file (ERR_GATEWAY_STATE_INVALID naming the file and
 * field), and a process following the file (watchStateFile) keeps its last
 * good snapshot and reports the error.
 */
import { COLLECTIONS, emptyConfig } from '../model/config.js';
import { isKongError, KONG_CODES } from '../model/kong-error.js';
import type { GatewayConfig, PluginSchemaDefinition } from '../model/types.js';
import { PLUGIN_SCHEMAS } from '../plugins/index.js';
import { KINDS } from './kinds.js';
import { insertEntity, type Entity } from './repo.js';

export const STATE_FORMAT = 'hospital-api-gateway-state/1';

export type StateValidation = { ok: true; errors: []; version: number; config: GatewayConfig } | { ok: false; errors: string[] };

const isRecord = (v: unknown): v is Entity => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Kong's nested `fields` → "a.b: message" lines under `prefix`. */
function describe(prefix: string, fields: unknown, out: string[]): void {
  if (isRecord(fields)) {
    for (const [k, v] of Object.entries(fields)) describe(k === '@entity' ? prefix : `${prefix}.${k}`, v, out);
  } else if (Array.isArray(fields)) {
    for (const m of fields) out.push(`${prefix}: ${String(m)}`);
  } else {
    out.push(`${prefix}: ${typeof fields === 'string' ? fields : JSON.stringify(fields)}`);
  }
}

/**
 * Checks a parsed state document. On success returns the configuration as
 * the store will hold it (Kong's defaults filled in for fields an older file
 * lacks; ids and timestamps as stored).
 */
export function validateState(state: unknown, plugins: ReadonlyMap<string, PluginSchemaDefinition> = PLUGIN_SCHEMAS): StateValidation {
  const errors: string[] = [];
  if (!isRecord(state)) return { ok: false, errors: ['(document): expected a JSON object'] };
  if (state.format !== STATE_FORMAT) errors.push(`format: expected "${STATE_FORMAT}"`);
  const version = state.version;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 0) errors.push('version: must be a non-negative integer');
  const raw = state.config ?? {};
  if (!isRecord(raw)) errors.push('config: expected an object');
  if (errors.length > 0) return { ok: false, errors };
  const rawConfig = raw as Entity;
  for (const key of Object.keys(rawConfig)) {
    if (!(COLLECTIONS as readonly string[]).includes(key)) errors.push(`config.${key}: unknown collection`);
  }
  const config = emptyConfig();
  const ctx = { plugins, coerce: false, passwords: 'stored' as const, uniquenessCheckedByCaller: true };
  for (const name of COLLECTIONS) {
    const list = rawConfig[name];
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      errors.push(`config.${name}: expected an array`);
      continue;
    }
    const kind = KINDS[name];
    const ids = new Set<string>();
    const uniques = new Map<string, Set<string>>();
    /** Ids, unique fields and unique tuples, by index: a state file with thousands of entities loads in linear time. */
    const checkUnique = (entity: Entity, at: string): void => {
      const seen = (key: string, value: string): boolean => {
        let set = uniques.get(key);
        if (!set) uniques.set(key, (set = new Set()));
        if (set.has(value)) return true;
        set.add(value);
        return false;
      };
      if (ids.has(entity.id as string)) errors.push(`${at}.id: another entity already has this value`);
      ids.add(entity.id as string);
      for (const f of kind.uniques) {
        const v = entity[f];
        if (v !== null && v !== undefined && seen(f, JSON.stringify(v))) errors.push(`${at}.${f}: another entity already has this value`);
      }
      for (const tuple of kind.uniqueTuples ?? []) {
        const key = JSON.stringify(tuple.map((f) => {
          const v = entity[f] ?? null;
          return isRecord(v) ? v.id : v;
        }));
        if (seen(tuple.join(','), key)) errors.push(`${at}.${tuple.join(',')}: another entity already has these values`);
      }
    };
    list.forEach((item: unknown, i) => {
      const at = `config.${name}[${i}]`;
      if (!isRecord(item)) {
        errors.push(`${at}: expected an object`);
        return;
      }
      if (typeof item.id !== 'string') errors.push(`${at}.id: required field missing`);
      for (const f of kind.auto ?? []) if (typeof item[f] !== 'string') errors.push(`${at}.${f}: required in the state file`);
      try {
        const built = insertEntity(config, name, item, ctx);
        checkUnique(built, at);
        if (kind.updatedAt && typeof item.updated_at === 'number') built.updated_at = item.updated_at;
      } catch (err) {
        if (!isKongError(err)) throw err;
        const before = errors.length;
        if (err.body.code === KONG_CODES.UNIQUE_VIOLATION && isRecord(err.body.fields)) {
          // Never echo the value: it may be an API key.
          for (const f of Object.keys(err.body.fields)) errors.push(`${at}.${f}: another entity already has this value`);
        } else if (err.body.code === KONG_CODES.FOREIGN_KEY_VIOLATION || err.body.code === KONG_CODES.FOREIGN_KEYS_UNRESOLVED) {
          const field = isRecord(err.body.fields) ? Object.keys(err.body.fields)[0] : undefined;
          errors.push(`${at}${field ? `.${field}` : ''}: ${String(err.body.message)}`);
        } else if (err.body.fields !== undefined) describe(at, err.body.fields, errors);
        if (errors.length === before) errors.push(`${at}: ${String(err.body.message)}`);
      }
    });
  }
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, errors: [], version: version as number, config };
}

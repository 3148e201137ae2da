/**
 * Entity operations on a draft configuration (inside GatewayStore.transact):
 * validate → resolve foreign keys → check uniqueness → write. Every check
 * runs before the draft is touched, and the store discards the draft on a
 * throw, so a failed change changes nothing. Errors are Kong's (kong/db/errors.lua).
 */
import { randomUUID } from 'node:crypto';
import type { CollectionName } from '../model/config.js';
import { COLLECTIONS } from '../model/config.js';
import { isUuid, validateFields } from '../model/fields.js';
import {
  foreignKeyRestricted,
  foreignKeysUnresolved,
  foreignKeyViolation,
  primaryKeyViolation,
  schemaViolation,
  uniqueViolation,
  type FlatErrors,
} from '../model/kong-error.js';
import type { GatewayConfig } from '../model/types.js';
import { KINDS, type KindDef, type RepoContext } from './kinds.js';

export type { RepoContext } from './kinds.js';
export type Entity = Record<string, unknown>;

function list(config: GatewayConfig, collection: CollectionName): Entity[] {
  return config[collection] as unknown as Entity[];
}

const now = (ms = false): number => (ms ? Math.floor(Date.now()) / 1000 : Math.floor(Date.now() / 1000));

/** The entity as the admin API returns it (a certificate with its SNI names). */
export function viewEntity(config: Readonly<GatewayConfig>, collection: CollectionName, entity: Entity): Entity {
  const view = KINDS[collection].view;
  return view ? view(config, entity) : entity;
}

/** A UUID-shaped segment is looked up only by id, anything else by the endpoint key (Kong's kong/api/endpoints.lua). */
export function findEntity(config: GatewayConfig, collection: CollectionName, idOrKey: string, within?: (e: Entity) => boolean): Entity | undefined {
  const kind = KINDS[collection];
  const items = within ? list(config, collection).filter(within) : list(config, collection);
  if (isUuid(idOrKey)) return items.find((e) => e.id === idOrKey.toLowerCase());
  if (collection === 'certificates') {
    // Kong's certificates endpoint takes an SNI name in place of the id (kong/api/routes/certificates.lua).
    const sni = config.snis.find((s) => s.name === idOrKey);
    return sni ? items.find((e) => e.id === sni.certificate.id) : undefined;
  }
  if (!kind.endpointKey) return undefined;
  return items.find((e) => e[kind.endpointKey as string] === idOrKey);
}

function resolveForeign(config: GatewayConfig, kind: KindDef, value: Entity): void {
  for (const fk of kind.foreign) {
    const ref = value[fk.field] as Entity | null;
    if (ref === null || ref === undefined) continue;
    if (ref.id !== undefined && ref.id !== null) {
      const target = typeof ref.id === 'string' ? list(config, fk.collection).find((e) => e.id === ref.id) : undefined;
      if (!target) throw foreignKeyViolation(fk.field, { id: ref.id }, fk.collection);
      value[fk.field] = { id: target.id };
    } else if (typeof ref[fk.nameKey] === 'string') {
      const target = list(config, fk.collection).find((e) => e[fk.nameKey] === ref[fk.nameKey]);
      if (!target) throw foreignKeysUnresolved(fk.field, fk.nameKey, ref[fk.nameKey], fk.collection);
      value[fk.field] = { id: target.id };
    } else {
      throw schemaViolation({ [`${fk.field}.id`]: 'required field missing' });
    }
  }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a !== null && typeof a === 'object' && b !== null && typeof b === 'object') return (a as Entity).id === (b as Entity).id;
  return a === b;
}

function checkUnique(config: GatewayConfig, kind: KindDef, value: Entity): void {
  // One pass, no copies: a state file or declarative document with thousands of entities is checked entity by entity.
  const fields = kind.uniques.filter((f) => value[f] !== null && value[f] !== undefined);
  const tuples = kind.uniqueTuples ?? [];
  if (fields.length === 0 && tuples.length === 0) return;
  for (const e of list(config, kind.collection)) {
    if (e.id === value.id) continue;
    for (const field of fields) if (e[field] === value[field]) throw uniqueViolation(field, value[field]);
    for (const tuple of tuples) {
      if (tuple.every((f) => sameValue(e[f] ?? null, value[f] ?? null))) {
        throw uniqueViolation(tuple.join(','), Object.fromEntries(tuple.map((f) => [f, value[f] ?? null])));
      }
    }
  }
}

/**
 * Builds a complete, valid entity from `input` (replacing `existing` if given, keeping its id and created_at).
 * @throws KongError 400 schema / foreign key, 409 unique or primary key
 */
function build(config: GatewayConfig, kind: KindDef, rawInput: Entity, ctx: RepoContext, existing?: Entity, supplied?: ReadonlySet<string>): Entity {
  const errors: FlatErrors = {};
  const input = kind.prepare ? kind.prepare(rawInput, errors) : rawInput;
  const res = validateFields(kind.fields, input, ctx.coerce, ['id', 'created_at', 'updated_at', ...(kind.transient ?? [])]);
  Object.assign(errors, res.errors);
  const value = res.value;
  let id = existing?.id as string | undefined;
  if (!existing && input.id !== undefined && input.id !== null) {
    if (isUuid(input.id)) id = input.id.toLowerCase();
    else errors.id = 'expected a valid UUID';
  }
  const created = input.created_at;
  if (created !== undefined && created !== null && !(kind.timestampsMs ? Number.isFinite(created) : Number.isInteger(created))) {
    errors.created_at = kind.timestampsMs ? 'expected a number' : 'expected an integer';
  }
  kind.check?.(value, errors, ctx, input);
  if (Object.keys(errors).length > 0) throw schemaViolation(errors);
  if (!existing && id && !ctx.uniquenessCheckedByCaller && list(config, kind.collection).some((e) => e.id === id)) throw primaryKeyViolation(id);
  resolveForeign(config, kind, value);
  kind.transform?.(value, ctx, supplied ?? new Set(Object.keys(rawInput)), existing);
  const ts = now(kind.timestampsMs);
  const entity: Entity = {
    id: id ?? randomUUID(),
    created_at: (existing?.created_at as number | undefined) ?? (created as number | undefined) ?? ts,
    ...(kind.updatedAt ? { updated_at: ts } : {}),
    ...value,
  };
  if (!ctx.uniquenessCheckedByCaller) checkUnique(config, kind, entity);
  return entity;
}

/** POST: creates an entity. `fixed` fields (a nested endpoint's parent) override the input. */
export function insertEntity(config: GatewayConfig, collection: CollectionName, input: Entity, ctx: RepoContext, fixed: Entity = {}): Entity {
  const raw = { ...input, ...fixed };
  const entity = build(config, KINDS[collection], raw, ctx);
  list(config, collection).push(entity);
  KINDS[collection].afterWrite?.(config, entity, raw, ctx, 'insert');
  return entity;
}

/** Kong merges nested records on PATCH; `base` is the stored value. */
function deepMerge(base: unknown, patch: unknown): unknown {
  if (!isRecord(base) || !isRecord(patch)) return patch;
  const out: Entity = { ...base };
  for (const [k, v] of Object.entries(patch)) out[k] = deepMerge(base[k], v);
  return out;
}

function replaceInList(config: GatewayConfig, collection: CollectionName, entity: Entity): void {
  const items = list(config, collection);
  items[items.findIndex((e) => e.id === entity.id)] = entity;
}

/** PATCH: merges `patch` onto `existing` (a plugin's config merges one level deep) and re-validates. */
export function updateEntity(config: GatewayConfig, collection: CollectionName, existing: Entity, patch: Entity, ctx: RepoContext, fixed: Entity = {}): Entity {
  const { id: _id, created_at: _c, updated_at: _u, ...base } = existing;
  if (collection === 'services' && patch.url !== undefined) {
    for (const f of ['protocol', 'host', 'port', 'path']) delete base[f];
  }
  const merged: Entity = { ...base, ...patch, ...fixed };
  if (collection === 'plugins' && isRecord(patch.config) && isRecord(existing.config)) {
    merged.config = { ...existing.config, ...patch.config };
  }
  if (collection === 'upstreams' && isRecord(patch.healthchecks)) merged.healthchecks = deepMerge(existing.healthchecks, patch.healthchecks);
  if (patch.id !== undefined && patch.id !== existing.id) throw schemaViolation({ id: 'cannot change the primary key' });
  delete merged.id;
  const entity = build(config, KINDS[collection], merged, ctx, existing, new Set(Object.keys(patch)));
  replaceInList(config, collection, entity);
  KINDS[collection].afterWrite?.(config, entity, patch, ctx, 'update');
  return entity;
}

/** PUT: the segment names the entity (id if UUID-shaped, else the endpoint key); replace or create. */
export function upsertEntity(config: GatewayConfig, collection: CollectionName, idOrKey: string, input: Entity, ctx: RepoContext, fixed: Entity = {}, within?: (e: Entity) => boolean): { entity: Entity; created: boolean } {
  const kind = KINDS[collection];
  const keyed: Entity = { ...input, ...fixed };
  if (isUuid(idOrKey)) keyed.id = idOrKey.toLowerCase();
  else if (kind.endpointKey) keyed[kind.endpointKey] = idOrKey;
  const existing = findEntity(config, collection, idOrKey, within);
  if (!existing) {
    const entity = build(config, kind, keyed, ctx);
    list(config, collection).push(entity);
    kind.afterWrite?.(config, entity, keyed, ctx, 'upsert');
    return { entity, created: true };
  }
  delete keyed.id;
  const entity = build(config, kind, keyed, ctx, existing);
  replaceInList(config, collection, entity);
  kind.afterWrite?.(config, entity, keyed, ctx, 'upsert');
  return { entity, created: false };
}

/** DELETE: restricted children (a service's routes) block it; cascaded children go with it. */
export function deleteEntity(config: GatewayConfig, collection: CollectionName, entity: Entity): void {
  for (const child of COLLECTIONS) {
    for (const fk of KINDS[child].foreign) {
      if (fk.collection !== collection || fk.onDelete !== 'restrict') continue;
      if (list(config, child).some((e) => (e[fk.field] as Entity | null)?.id === entity.id)) throw foreignKeyRestricted(collection, child);
    }
  }
  if (collection === 'ca_certificates' && config.services.some((s) => s.ca_certificates?.includes(entity.id as string))) {
    throw foreignKeyRestricted(collection, 'services');
  }
  for (const child of COLLECTIONS) {
    for (const fk of KINDS[child].foreign) {
      if (fk.collection !== collection) continue;
      const kept = list(config, child).filter((e) => (e[fk.field] as Entity | null)?.id !== entity.id);
      for (const gone of list(config, child).filter((e) => !kept.includes(e))) deleteEntity(config, child, gone);
    }
  }
  const items = list(config, collection);
  const i = items.findIndex((e) => e.id === entity.id);
  if (i >= 0) items.splice(i, 1);
}

function isRecord(v: unknown): v is Entity {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

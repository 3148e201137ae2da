/**
 * Declarative config (Kong's kong/db/schema/others/declarative_config.lua) → GatewayConfig. Every entity goes through
 * the same validation as the admin API (store/repo.ts) on an empty
 * configuration, nested entities getting their parent's key; all errors are
 * collected and reported at once as Kong's code-14 error.
 */
import { COLLECTIONS, emptyConfig } from '../model/config.js';
import type { CollectionName } from '../model/config.js';
import { isUuid } from '../model/fields.js';
import { declarativeInvalid, isKongError, KONG_CODES, type FlatErrors } from '../model/kong-error.js';
import type { GatewayConfig, PluginSchemaDefinition } from '../model/types.js';
import { PLUGIN_SCHEMAS } from '../plugins/index.js';
import { insertEntity, type Entity, type RepoContext } from '../store/repo.js';

const FORMATS = ['1.1', '2.1', '3.0'];
const META = ['_format_version', '_transform', '_comment', '_ignore', '_info', '_workspace'];
/** Top-level entity lists, parents before children (a child refers to an earlier entity by name or id). */
const TOP: readonly CollectionName[] = COLLECTIONS;
const CREDENTIALS = ['keyauth_credentials', 'basicauth_credentials', 'hmacauth_credentials', 'jwt_secrets', 'oauth2_credentials', 'acls'];
const NESTED: Record<string, readonly string[]> = {
  certificates: ['snis'],
  upstreams: ['targets'],
  services: ['routes', 'plugins'],
  routes: ['plugins'],
  consumers: ['plugins', ...CREDENTIALS],
};
const PARENT_FIELD: Record<string, string> = { services: 'service', routes: 'route', consumers: 'consumer', certificates: 'certificate', upstreams: 'upstream' };
/** A reference given as a string: a UUID is an id, anything else this key. */
const REF_KEY: Record<string, string> = { service: 'name', route: 'name', consumer: 'username', upstream: 'name', certificate: 'id', client_certificate: 'id' };

function isRecord(v: unknown): v is Entity {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Flattens Kong's nested `fields` under a path prefix: `services.0.host`. */
function flatten(prefix: string, fields: unknown, out: FlatErrors): void {
  if (isRecord(fields)) {
    for (const [k, v] of Object.entries(fields)) {
      if (k === '@entity' && Array.isArray(v)) out[`${prefix}.@entity`] = v as string[];
      else flatten(`${prefix}.${k}`, v, out);
    }
  } else out[prefix] = typeof fields === 'string' ? fields : JSON.stringify(fields);
}

/** A top-level entity may name others by a string (name or id) as well as by `{id}`/`{name}`. */
function normaliseRefs(entity: Entity): Entity {
  const out = { ...entity };
  for (const [field, key] of Object.entries(REF_KEY)) {
    const v = out[field];
    if (typeof v === 'string') out[field] = isUuid(v) ? { id: v } : { [key]: v };
  }
  return out;
}

class Builder {
  readonly config: GatewayConfig = emptyConfig();
  readonly errors: FlatErrors = {};
  constructor(private readonly ctx: RepoContext) {}

  list(path: string, name: string, value: unknown, fixed: Entity): void {
    if (value === undefined || value === null) return;
    if (!Array.isArray(value)) {
      this.errors[path] = 'expected an array';
      return;
    }
    value.forEach((item, i) => this.entity(`${path}.${i}`, name, item, fixed));
  }

  entity(path: string, name: string, item: unknown, fixed: Entity): void {
    if (!isRecord(item)) {
      this.errors[path] = 'expected a record';
      return;
    }
    const nestedNames = NESTED[name] ?? [];
    const own: Entity = {};
    for (const [k, v] of Object.entries(item)) if (!nestedNames.includes(k)) own[k] = v;
    let created: Entity;
    try {
      created = insertEntity(this.config, name as CollectionName, normaliseRefs(own), this.ctx, fixed);
    } catch (err) {
      if (!isKongError(err)) throw err;
      const fields = err.body.fields;
      if (err.body.code === KONG_CODES.UNIQUE_VIOLATION && isRecord(fields)) {
        // Kong: "uniqueness violation: … already declared"; an API key is never echoed.
        for (const [f, v] of Object.entries(fields)) {
          this.errors[`${path}.${f}`] =
            f === 'key' ? `uniqueness violation: '${name}' entity with this key already declared` : `uniqueness violation: '${name}' entity with ${f} set to '${typeof v === 'string' ? v : JSON.stringify(v)}' already declared`;
        }
      } else if (fields !== undefined) flatten(path, fields, this.errors);
      else this.errors[path] = String(err.body.message);
      return;
    }
    const parentField = PARENT_FIELD[name];
    for (const child of nestedNames) {
      const childFixed = parentField ? { [parentField]: { id: created.id } } : {};
      this.list(`${path}.${child}`, child, item[child], childFixed);
    }
  }
}

/**
 * Parses a declarative document. `_transform: false` takes basic-auth
 * passwords as already hashed (Kong's SHA-1 hex or our scrypt form). Without
 * it (Kong's default `_transform: true`, kong/db/schema/others/declarative_config.lua)
 * Kong runs the basic-auth transformation on every password
 * (kong/db/declarative/import.lua `should_transform`; kong/plugins/basic-auth/daos.lua
 * hashes with no check for an existing hash), and so do we, with one
 * exception: our own `scrypt$N$r$p$salt$hash` form is kept as stored. Kong has
 * no such form, so nothing Kong loads changes meaning; the decK-format export
 * (`gateway export`, which may not carry `_transform`: decK 1.4.0's schema
 * refuses it) carries these hashes, and re-hashing one would make a credential
 * nobody can use. A 40-hex Kong SHA-1 value is hashed like any password, as Kong does.
 * @throws KongError ERR_GATEWAY_DECLARATIVE_INVALID with Kong's code-14 body
 */
export function parseDeclarative(doc: unknown, plugins: ReadonlyMap<string, PluginSchemaDefinition> = PLUGIN_SCHEMAS): GatewayConfig {
  if (!isRecord(doc)) throw declarativeInvalid({ '@entity': ['expected a declarative configuration'] });
  const errors: FlatErrors = {};
  const format = doc._format_version;
  if (format === undefined || format === null) errors._format_version = 'required field missing';
  else if (typeof format !== 'string' || !FORMATS.includes(format)) errors._format_version = `expected one of: ${FORMATS.join(', ')}`;
  const transform = doc._transform ?? true;
  if (typeof transform !== 'boolean') errors._transform = 'expected a boolean';
  for (const key of Object.keys(doc)) {
    if (META.includes(key) || (TOP as readonly string[]).includes(key)) continue;
    const v = doc[key];
    if (!(Array.isArray(v) && v.length === 0)) errors[key] = 'unknown field (not supported by the native gateway)';
  }
  if (Object.keys(errors).length > 0) throw declarativeInvalid(errors);
  const builder = new Builder({ plugins, coerce: false, passwords: transform === false ? 'stored' : 'declarative' });
  for (const name of TOP) builder.list(name, name, doc[name], {});
  if (Object.keys(builder.errors).length > 0) throw declarativeInvalid(builder.errors);
  return builder.config;
}

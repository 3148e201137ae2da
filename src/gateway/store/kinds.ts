/**
 * One descriptor per entity collection: its fields, endpoint key (for
 * name-or-id lookup, kong.md §1), unique fields, foreign keys with their
 * delete rule, and the checks and transforms Kong's schemas apply.
 */
import { X509Certificate } from 'node:crypto';
import type { CollectionName } from '../model/config.js';
import {
  ACL_FIELDS,
  applyServiceUrl,
  BASICAUTH_FIELDS,
  CA_CERTIFICATE_FIELDS,
  checkConsumer,
  checkRouteMatchers,
  checkServiceTls,
  CONSUMER_FIELDS,
  KEYAUTH_FIELDS,
  PLUGIN_FIELDS,
  ROUTE_FIELDS,
  SERVICE_FIELDS,
} from '../model/entities.js';
import type { FieldSpecs } from '../model/fields.js';
import { generateApiKey } from '../model/keys.js';
import type { FlatErrors } from '../model/kong-error.js';
import { hashBasicAuthPassword, isStoredPasswordHash } from '../model/password.js';
import type { PluginSchemaDefinition } from '../model/types.js';

export interface RepoContext {
  plugins: ReadonlyMap<string, PluginSchemaDefinition>;
  /** Form-encoded input: coerce "80" → 80, "true" → true. */
  coerce: boolean;
  /**
   * How basic-auth passwords arrive: 'hash' hashes them (admin API, `_transform: true`),
   * 'stored' takes them as already hashed (declarative `_transform: false`).
   */
  passwords: 'hash' | 'stored';
}

export interface ForeignDef {
  field: string;
  collection: CollectionName;
  /** The non-id key a reference may use: `{"name": …}` or `{"username": …}`. */
  nameKey: string;
  onDelete: 'cascade' | 'restrict';
}

type Entity = Record<string, unknown>;

export interface KindDef {
  collection: CollectionName;
  endpointKey: string | null;
  uniques: readonly string[];
  /** Field tuples that must be unique together (plugins, acls). */
  uniqueTuples?: readonly (readonly string[])[];
  foreign: readonly ForeignDef[];
  fields: FieldSpecs;
  updatedAt: boolean;
  /** Input-only fields (a service's `url`) expanded before validation. */
  prepare?(input: Entity, errors: FlatErrors): Entity;
  /** Entity checks after field validation; write errors into `errors`. */
  check?(value: Entity, errors: FlatErrors, ctx: RepoContext, input: Entity): void;
  /** After foreign keys resolve: generated and derived fields. `supplied` = fields the caller sent. */
  transform?(value: Entity, ctx: RepoContext, supplied: ReadonlySet<string>, existing: Entity | undefined): void;
}

function pluginCheck(value: Entity, errors: FlatErrors, ctx: RepoContext, input: Entity): void {
  const name = value.name;
  if (typeof name !== 'string') return;
  const schema = ctx.plugins.get(name);
  if (!schema) {
    // kong.md §1: unknown plugin
    errors.name = `plugin '${name}' not enabled; add it to the 'plugins' configuration property`;
    return;
  }
  const res = schema.validate(input.config ?? {});
  if (res.ok) value.config = res.config;
  else for (const [k, msg] of Object.entries(res.errors)) errors[k.startsWith('config.') ? k : `config.${k}`] = msg;
  if (!schema.consumerScopable && value.consumer !== null) errors.consumer = 'value must be null';
}

const consumerRef: ForeignDef = { field: 'consumer', collection: 'consumers', nameKey: 'username', onDelete: 'cascade' };

export const KINDS: Readonly<Record<CollectionName, KindDef>> = {
  services: {
    collection: 'services',
    endpointKey: 'name',
    uniques: ['name'],
    foreign: [],
    fields: SERVICE_FIELDS,
    updatedAt: true,
    prepare(input, errors) {
      if (input.url === undefined) return input;
      const { url, ...rest } = input;
      applyServiceUrl(url, rest, errors);
      return rest;
    },
    check: (value, errors) => checkServiceTls(value, errors),
  },
  routes: {
    collection: 'routes',
    endpointKey: 'name',
    uniques: ['name'],
    foreign: [{ field: 'service', collection: 'services', nameKey: 'name', onDelete: 'restrict' }],
    fields: ROUTE_FIELDS,
    updatedAt: true,
    check: (value, errors) => checkRouteMatchers(value, errors),
  },
  consumers: {
    collection: 'consumers',
    endpointKey: 'username',
    uniques: ['username', 'custom_id'],
    foreign: [],
    fields: CONSUMER_FIELDS,
    updatedAt: true,
    check: (value, errors) => checkConsumer(value, errors),
  },
  plugins: {
    collection: 'plugins',
    endpointKey: 'instance_name',
    uniques: ['instance_name'],
    uniqueTuples: [['name', 'route', 'service', 'consumer']],
    foreign: [
      { field: 'route', collection: 'routes', nameKey: 'name', onDelete: 'cascade' },
      { field: 'service', collection: 'services', nameKey: 'name', onDelete: 'cascade' },
      consumerRef,
    ],
    fields: PLUGIN_FIELDS,
    updatedAt: true,
    check: pluginCheck,
  },
  keyauth_credentials: {
    collection: 'keyauth_credentials',
    endpointKey: 'key',
    uniques: ['key'],
    foreign: [consumerRef],
    fields: KEYAUTH_FIELDS,
    updatedAt: false,
    transform(value) {
      if (value.key === null) value.key = generateApiKey();
    },
  },
  basicauth_credentials: {
    collection: 'basicauth_credentials',
    endpointKey: 'username',
    uniques: ['username'],
    foreign: [consumerRef],
    fields: BASICAUTH_FIELDS,
    updatedAt: false,
    check(value, errors, ctx) {
      if (ctx.passwords === 'stored' && typeof value.password === 'string' && !isStoredPasswordHash(value.password)) {
        errors.password = 'with _transform: false, expected a SHA-1 hex or scrypt$ hash';
      }
    },
    transform(value, ctx, supplied, existing) {
      const consumerId = (value.consumer as { id: string }).id;
      if (!supplied.has('password') && existing) value.password = existing.password;
      else if (ctx.passwords === 'hash') value.password = hashBasicAuthPassword(value.password as string, consumerId);
    },
  },
  acls: {
    collection: 'acls',
    endpointKey: 'group',
    uniques: [],
    uniqueTuples: [['consumer', 'group']],
    foreign: [consumerRef],
    fields: ACL_FIELDS,
    updatedAt: false,
  },
  ca_certificates: {
    collection: 'ca_certificates',
    endpointKey: null,
    uniques: [],
    foreign: [],
    fields: CA_CERTIFICATE_FIELDS,
    updatedAt: false,
    check(value, errors) {
      if (typeof value.cert !== 'string') return;
      try {
        const cert = new X509Certificate(value.cert);
        if (!cert.ca) errors.cert = 'certificate does not appear to be a CA because it is missing the "CA" basic constraint';
        value.cert_digest = cert.fingerprint256.replace(/:/g, '').toLowerCase();
      } catch (err) {
        errors.cert = `invalid certificate: ${(err as Error).message}`;
      }
    },
  },
};

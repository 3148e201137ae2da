/**
 * One descriptor per entity collection: its fields, endpoint key (for
 * name-or-id lookup, Kong's kong/api/endpoints.lua), unique fields, foreign keys with their
 * delete rule, and the checks and transforms Kong's schemas apply.
 */
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import type { CollectionName } from '../model/config.js';
import type { GatewayConfig } from '../model/types.js';
import {
  ACL_FIELDS,
  applyServiceUrl,
  BASICAUTH_FIELDS,
  CA_CERTIFICATE_FIELDS,
  CERTIFICATE_FIELDS,
  checkConsumer,
  checkRouteMatchers,
  checkServiceTls,
  CONSUMER_FIELDS,
  HMACAUTH_FIELDS,
  JWT_FIELDS,
  KEYAUTH_FIELDS,
  OAUTH2_FIELDS,
  PLUGIN_FIELDS,
  ROUTE_FIELDS,
  SERVICE_FIELDS,
  SNI_FIELDS,
  TARGET_FIELDS,
  UPSTREAM_FIELDS,
} from '../model/entities.js';
import type { FieldSpecs } from '../model/fields.js';
import { normalizeHealthchecks } from '../model/healthchecks.js';
import { normalizeIp } from '../model/hostname.js';
import { generateApiKey } from '../model/keys.js';
import type { FlatErrors } from '../model/kong-error.js';
import { hashBasicAuthPassword, isScryptPasswordHash, isStoredPasswordHash } from '../model/password.js';
import type { PluginSchemaDefinition } from '../model/types.js';
import { certificateSnisAfterWrite, certificateView } from './certificate-snis.js';

export interface RepoContext {
  plugins: ReadonlyMap<string, PluginSchemaDefinition>;
  /** Form-encoded input: coerce "80" → 80, "true" → true. */
  coerce: boolean;
  /**
   * How basic-auth passwords arrive: 'hash' hashes them (admin API),
   * 'stored' takes them as already hashed (declarative `_transform: false`),
   * 'declarative' hashes them unless they are our own scrypt form (declarative
   * without `_transform: false`: the decK-format export; src/gateway/declarative/parse.ts).
   */
  passwords: 'hash' | 'stored' | 'declarative';
  /**
   * The caller checks ids and unique fields itself with indexes (validateState
   * over a whole state file); skips the per-entity scans that make bulk loads quadratic.
   */
  uniquenessCheckedByCaller?: boolean;
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
  /** Fields generated when absent (`auto = true` in Kong's schema); a state file must hold them. */
  auto?: readonly string[];
  /** Timestamps in seconds with millisecond precision (Kong's auto_timestamp_ms, targets). */
  timestampsMs?: boolean;
  /** Input-only fields besides the schema's (a certificate's `snis`); kept out of field validation. */
  transient?: readonly string[];
  /** After the entity is written: maintain dependent entities (a certificate's SNIs). */
  afterWrite?(config: GatewayConfig, entity: Entity, rawInput: Entity, ctx: RepoContext, mode: 'insert' | 'update' | 'upsert'): void;
  /** The entity as the admin API returns it (a certificate lists its SNI names). */
  view?(config: Readonly<GatewayConfig>, entity: Entity): Entity;
}

/** Kong's targets DAO: a target without a port gets 8000; IPv6 is bracketed and expanded. */
function formatTarget(target: string): string | null {
  const r = normalizeIp(target);
  if (!r.ok) return null;
  const host = r.value.type === 'ipv6' ? `[${r.value.host}]` : r.value.host;
  return `${host}:${r.value.port ?? 8000}`;
}

const generate = (...fields: string[]) => (value: Entity): void => {
  for (const f of fields) if (value[f] === null) value[f] = generateApiKey();
};

function pluginCheck(value: Entity, errors: FlatErrors, ctx: RepoContext, input: Entity): void {
  const name = value.name;
  if (typeof name !== 'string') return;
  const schema = ctx.plugins.get(name);
  if (!schema) {
    // Kong's kong/db/schema/entities/plugins.lua: unknown plugin
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
    foreign: [{ field: 'client_certificate', collection: 'certificates', nameKey: 'id', onDelete: 'restrict' }],
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
    auto: ['key'],
    transform: generate('key'),
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
      else if (ctx.passwords === 'hash' || (ctx.passwords === 'declarative' && !(typeof value.password === 'string' && isScryptPasswordHash(value.password)))) {
        value.password = hashBasicAuthPassword(value.password as string, consumerId);
      }
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
  certificates: {
    collection: 'certificates',
    endpointKey: null,
    uniques: [],
    foreign: [],
    fields: CERTIFICATE_FIELDS,
    updatedAt: true,
    transient: ['snis'],
    check: checkCertificatePair,
    afterWrite: certificateSnisAfterWrite,
    view: certificateView,
  },
  snis: {
    collection: 'snis',
    endpointKey: 'name',
    uniques: ['name'],
    foreign: [{ field: 'certificate', collection: 'certificates', nameKey: 'id', onDelete: 'cascade' }],
    fields: SNI_FIELDS,
    updatedAt: true,
  },
  upstreams: {
    collection: 'upstreams',
    endpointKey: 'name',
    uniques: ['name'],
    foreign: [{ field: 'client_certificate', collection: 'certificates', nameKey: 'id', onDelete: 'restrict' }],
    fields: UPSTREAM_FIELDS,
    updatedAt: true,
    check(value, errors, ctx, input) {
      value.healthchecks = normalizeHealthchecks(input.healthchecks, errors, ctx.coerce);
      checkUpstreamHashing(value, input, errors);
    },
  },
  targets: {
    collection: 'targets',
    endpointKey: 'target',
    uniques: [],
    uniqueTuples: [['upstream', 'target']],
    foreign: [{ field: 'upstream', collection: 'upstreams', nameKey: 'name', onDelete: 'cascade' }],
    fields: TARGET_FIELDS,
    updatedAt: true,
    timestampsMs: true,
    check(value, errors) {
      if (typeof value.target !== 'string') return;
      const formatted = formatTarget(value.target);
      if (formatted === null) errors.target = 'Invalid target; not a valid hostname or ip address';
      else value.target = formatted;
    },
  },
  hmacauth_credentials: {
    collection: 'hmacauth_credentials',
    endpointKey: 'username',
    uniques: ['username'],
    foreign: [consumerRef],
    fields: HMACAUTH_FIELDS,
    updatedAt: false,
    auto: ['secret'],
    transform: generate('secret'),
  },
  jwt_secrets: {
    collection: 'jwt_secrets',
    endpointKey: 'key',
    uniques: ['key'],
    foreign: [consumerRef],
    fields: JWT_FIELDS,
    updatedAt: false,
    auto: ['key', 'secret'],
    check(value, errors) {
      // jwt/daos.lua: asymmetric algorithms need a public key that parses.
      const alg = value.algorithm;
      if (typeof alg !== 'string' || !/^(RS|PS|ES)\d{3}$|^EdDSA$/.test(alg) || alg.startsWith('ES')) return;
      if (value.rsa_public_key === null) errors.rsa_public_key = 'required field missing';
      else {
        try {
          createPublicKey(value.rsa_public_key as string);
        } catch {
          errors.rsa_public_key = 'invalid key';
        }
      }
    },
    transform: generate('key', 'secret'),
  },
  oauth2_credentials: {
    collection: 'oauth2_credentials',
    endpointKey: 'client_id',
    uniques: ['client_id'],
    foreign: [consumerRef],
    fields: OAUTH2_FIELDS,
    updatedAt: false,
    auto: ['client_id', 'client_secret'],
    transform(value, ctx, supplied, existing) {
      generate('client_id')(value);
      if (value.client_secret === null) value.client_secret = existing && !supplied.has('client_secret') ? existing.client_secret : generateApiKey();
      // oauth2/daos.lua: hash_secret stores a hash of the secret; this gateway never verifies it (no oauth2 plugin).
      if (value.hash_secret === true && ctx.passwords === 'hash' && (supplied.has('client_secret') || !existing || existing.hash_secret !== true)) {
        value.client_secret = hashBasicAuthPassword(value.client_secret as string, (value.consumer as { id: string }).id);
      }
    },
  },
};

/** certificates.lua: the key must belong to the certificate (and the alternative pair likewise). */
function checkCertificatePair(value: Entity, errors: FlatErrors): void {
  const pair = (certField: string, keyField: string, what: string): void => {
    const cert = value[certField];
    const key = value[keyField];
    if (typeof cert !== 'string' || typeof key !== 'string') {
      // cert and key are required fields (reported already); the alternative pair is all or none.
      if (certField === 'cert_alt' && (cert === null) !== (key === null)) errors['@entity'] = [`all or none of these fields must be set: '${certField}', '${keyField}'`];
      return;
    }
    let x509: X509Certificate;
    try {
      x509 = new X509Certificate(cert);
    } catch {
      errors[certField] = 'invalid certificate: x509.new: failed to parse certificate';
      return;
    }
    let pub: string;
    try {
      pub = createPublicKey(createPrivateKey(key)).export({ type: 'spki', format: 'pem' }).toString();
    } catch {
      errors[keyField] = 'invalid key: pkey.new: failed to load key';
      return;
    }
    if (x509.publicKey.export({ type: 'spki', format: 'pem' }).toString() !== pub) errors['@entity'] = [`${what} does not match key`];
  };
  pair('cert', 'key', 'certificate');
  if (value.cert_alt !== null || value.key_alt !== null) pair('cert_alt', 'key_alt', 'alternative certificate');
}

/** upstreams.lua entity checks on hash_on / hash_fallback and their companion fields. */
function checkUpstreamHashing(value: Entity, input: Entity, errors: FlatErrors): void {
  // Shorthands: least-connections and latency clear hash_on; a hash_on other than none means consistent-hashing.
  if ((value.algorithm === 'least-connections' || value.algorithm === 'latency') && input.hash_on === undefined) value.hash_on = 'none';
  if (input.algorithm === undefined && typeof input.hash_on === 'string') value.algorithm = input.hash_on === 'none' ? 'round-robin' : 'consistent-hashing';
  const need = (when: string, on: unknown, field: string): void => {
    if (on === when && value[field] === null) errors[field] = 'required field missing';
  };
  need('header', value.hash_on, 'hash_on_header');
  need('header', value.hash_fallback, 'hash_fallback_header');
  need('cookie', value.hash_on, 'hash_on_cookie');
  need('cookie', value.hash_fallback, 'hash_on_cookie');
  need('query_arg', value.hash_on, 'hash_on_query_arg');
  need('query_arg', value.hash_fallback, 'hash_fallback_query_arg');
  need('uri_capture', value.hash_on, 'hash_on_uri_capture');
  need('uri_capture', value.hash_fallback, 'hash_fallback_uri_capture');
  if ((value.hash_on === 'none' || value.hash_on === 'cookie') && value.hash_fallback !== 'none') errors.hash_fallback = 'expected one of: none';
  else if (value.hash_on === value.hash_fallback && value.hash_on !== 'none' && value.hash_on !== 'header' && value.hash_on !== 'query_arg' && value.hash_on !== 'uri_capture') {
    errors.hash_fallback = 'must not be equal to hash_on';
  }
  for (const [a, b] of [
    ['hash_on_header', 'hash_fallback_header'],
    ['hash_on_query_arg', 'hash_fallback_query_arg'],
    ['hash_on_uri_capture', 'hash_fallback_uri_capture'],
  ] as const) {
    if (value[a] !== null && value[a] === value[b]) errors['@entity'] = [`values of these fields must be distinct: '${a}', '${b}'`];
  }
}

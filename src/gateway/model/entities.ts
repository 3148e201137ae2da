/**
 * Core entity schemas: fields, Kong's defaults and entity checks (kong.md §1;
 * Kong's kong/db/schema/entities/*.lua and the key-auth/basic-auth/acl daos).
 */
import type { FieldSpecs } from './fields.js';
import type { FlatErrors } from './kong-error.js';

const NAME = /^[A-Za-z0-9.\-_~]+$/;
const checkName = (v: string): string | null =>
  NAME.test(v) ? null : `invalid value '${v}': it must only contain alphanumeric and '., -, _, ~' characters`;
const HOST = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.?)+$|^\[?[0-9A-Fa-f:.]+\]?$/;
const checkHost = (v: string): string | null => (HOST.test(v) ? null : `invalid value: ${v}`);
const checkRoutePath = (v: string): string | null => {
  if (!v.startsWith('/') && !v.startsWith('~/')) return 'should start with: / (fixed path) or ~/ (regex path)';
  if (!v.startsWith('~') && v.includes('//')) return 'must not have empty segments';
  return null;
};
const METHOD = /^[A-Z]+$/;

export const PROTOCOLS = ['grpc', 'grpcs', 'http', 'https', 'tcp', 'tls', 'tls_passthrough', 'udp'] as const;
const TIMEOUT = [1, 2147483646] as const;

export const SERVICE_FIELDS: FieldSpecs = {
  name: { type: 'string', check: checkName },
  retries: { type: 'integer', default: 5, between: [0, 32767] },
  protocol: { type: 'string', default: 'http', required: true, oneOf: PROTOCOLS },
  host: { type: 'string', required: true, check: checkHost },
  port: { type: 'integer', default: 80, required: true, between: [0, 65535] },
  path: { type: 'string', check: (v) => (v.startsWith('/') ? null : 'should start with: /') },
  connect_timeout: { type: 'integer', default: 60000, between: TIMEOUT },
  write_timeout: { type: 'integer', default: 60000, between: TIMEOUT },
  read_timeout: { type: 'integer', default: 60000, between: TIMEOUT },
  tags: { type: 'set' },
  client_certificate: { type: 'foreign' },
  tls_verify: { type: 'boolean' },
  tls_verify_depth: { type: 'integer', between: [0, 64] },
  ca_certificates: { type: 'uuid-array' },
  enabled: { type: 'boolean', default: true, required: true },
};

export const ROUTE_FIELDS: FieldSpecs = {
  name: { type: 'string', check: checkName },
  protocols: { type: 'set', default: ['http', 'https'], required: true, oneOf: [...PROTOCOLS, 'ws', 'wss'] },
  methods: { type: 'set', upper: true, check: (v) => (METHOD.test(v) ? null : 'invalid value: ' + v) },
  hosts: { type: 'set' },
  paths: { type: 'set', check: checkRoutePath },
  headers: { type: 'map' },
  snis: { type: 'set' },
  sources: { type: 'json-array' },
  destinations: { type: 'json-array' },
  https_redirect_status_code: { type: 'integer', default: 426, required: true, oneOf: [426, 301, 302, 307, 308] },
  regex_priority: { type: 'integer', default: 0 },
  strip_path: { type: 'boolean', default: true, required: true },
  path_handling: { type: 'string', default: 'v0', oneOf: ['v0', 'v1'] },
  preserve_host: { type: 'boolean', default: false, required: true },
  request_buffering: { type: 'boolean', default: true, required: true },
  response_buffering: { type: 'boolean', default: true, required: true },
  tags: { type: 'set' },
  service: { type: 'foreign' },
};

export const CONSUMER_FIELDS: FieldSpecs = {
  username: { type: 'string' },
  custom_id: { type: 'string' },
  tags: { type: 'set' },
};

export const PLUGIN_FIELDS: FieldSpecs = {
  name: { type: 'string', required: true },
  instance_name: { type: 'string', check: checkName },
  route: { type: 'foreign' },
  service: { type: 'foreign' },
  consumer: { type: 'foreign' },
  config: { type: 'record' },
  protocols: { type: 'set', default: ['grpc', 'grpcs', 'http', 'https'], required: true, oneOf: [...PROTOCOLS, 'ws', 'wss'] },
  enabled: { type: 'boolean', default: true, required: true },
  tags: { type: 'set' },
};

export const KEYAUTH_FIELDS: FieldSpecs = {
  consumer: { type: 'foreign', required: true },
  key: { type: 'string' },
  ttl: { type: 'integer', between: [0, 100000000] },
  tags: { type: 'set' },
};

export const BASICAUTH_FIELDS: FieldSpecs = {
  consumer: { type: 'foreign', required: true },
  username: { type: 'string', required: true },
  password: { type: 'string', required: true },
  tags: { type: 'set' },
};

export const ACL_FIELDS: FieldSpecs = {
  consumer: { type: 'foreign', required: true },
  group: { type: 'string', required: true },
  tags: { type: 'set' },
};

export const CA_CERTIFICATE_FIELDS: FieldSpecs = {
  cert: { type: 'string', required: true },
  cert_digest: { type: 'string' },
  tags: { type: 'set' },
};

/** `url` shorthand (kong.md §1): sets protocol/host/port/path; default port by scheme. */
export function applyServiceUrl(url: unknown, value: Record<string, unknown>, errors: FlatErrors): void {
  if (typeof url !== 'string') {
    errors.url = 'expected a string';
    return;
  }
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#:[\]]+|\[[^\]]+\])(?::(\d+))?(\/[^?#]*)?$/.exec(url);
  if (!m) {
    errors.url = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[/?#:]/.test(url) || !url.includes('://') ? 'missing host in url' : 'invalid url';
    return;
  }
  const protocol = (m[1] as string).toLowerCase();
  value.protocol = protocol;
  value.host = (m[2] as string).replace(/^\[|\]$/g, '');
  value.port = m[3] !== undefined ? Number(m[3]) : protocol === 'https' || protocol === 'grpcs' || protocol === 'tls' ? 443 : 80;
  value.path = m[4] ?? null;
}

/** Kong: the upstream TLS fields are only allowed when protocol is https or tls. */
export function checkServiceTls(value: Record<string, unknown>, errors: FlatErrors): void {
  if (value.protocol === 'https' || value.protocol === 'tls') return;
  let bad = false;
  for (const f of ['client_certificate', 'tls_verify', 'tls_verify_depth', 'ca_certificates']) {
    if (value[f] !== null && value[f] !== undefined) {
      errors[f] = 'value must be null';
      bad = true;
    }
  }
  if (bad) errors['@entity'] = ["failed conditional validation given value of field 'protocol'"];
}

/** kong.md §1: an http(s) route needs one of methods, hosts, headers or paths (snis too for https). */
export function checkRouteMatchers(value: Record<string, unknown>, errors: FlatErrors): void {
  const protocols = (value.protocols as string[] | null) ?? [];
  const set = (f: string): boolean => {
    const v = value[f];
    return v !== null && v !== undefined && (Array.isArray(v) ? v.length > 0 : Object.keys(v as object).length > 0);
  };
  const tlsy = protocols.some((p) => p === 'https' || p === 'grpcs');
  if (tlsy && !['methods', 'hosts', 'headers', 'paths', 'snis'].some(set)) {
    errors['@entity'] = ["must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'"];
  } else if (!tlsy && protocols.some((p) => p === 'http' || p === 'grpc') && !['methods', 'hosts', 'headers', 'paths'].some(set)) {
    errors['@entity'] = ["must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is 'http'"];
  }
}

export function checkConsumer(value: Record<string, unknown>, errors: FlatErrors): void {
  if (value.username === null && value.custom_id === null) {
    errors['@entity'] = ["at least one of these fields must be non-empty: 'custom_id', 'username'"];
  }
}

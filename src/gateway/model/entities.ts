/**
 * Core entity schemas: fields, Kong's defaults and entity checks
 * (Kong's kong/db/schema/entities/*.lua and the key-auth/basic-auth/acl daos).
 */
import type { FieldSpecs } from './fields.js';
import { checkHost, checkHostWithOptionalPort, checkRouteHost, checkSni, checkWildcardHost } from './hostname.js';
import type { FlatErrors } from './kong-error.js';
import { routePathError } from './route-regex.js';

// Every check below is a single pass over its input (issue 12: no validator may take more than linear time);
// the regexes left are single character classes under one quantifier, which cannot backtrack.
const NAME = /^[A-Za-z0-9.\-_~]+$/;
const checkName = (v: string): string | null =>
  NAME.test(v) ? null : `invalid value '${v}': it must only contain alphanumeric and '., -, _, ~' characters`;
const checkRoutePath = (v: string): string | null => {
  if (!v.startsWith('/') && !v.startsWith('~/')) return 'should start with: / (fixed path) or ~/ (regex path)';
  if (v.startsWith('~')) return routePathError(v);
  if (v.includes('//')) return 'must not have empty segments';
  return null;
};
const METHOD = /^[A-Z]+$/;

/** typedefs.lua validate_tag: printable ASCII except `,` and `/` (they separate tags in `?tags=`), or non-ASCII. */
function checkTag(tag: string): string | null {
  for (let i = 0; i < tag.length; i++) {
    const c = tag.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0x2c || c === 0x2f) {
      return `invalid tag '${tag}': expected printable ascii (except \`,\` and \`/\`) or valid utf-8 sequences`;
    }
  }
  return null;
}
const TAGS = { type: 'set', check: checkTag } as const;

/**
 * A key-auth key travels in a header (or query string): it must be printable
 * ASCII with no leading or trailing space, or no client could ever send it
 * (RFC 9110 §5.5 field values; issue 12: "   " and "a\r\nb" were accepted).
 */
export function checkHeaderSafeSecret(v: string): string | null {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return 'must only contain printable ASCII characters (it is sent in a header)';
  }
  if (v.trim() !== v || v.trim() === '') return 'must not be blank or start or end with a space (it is sent in a header)';
  return null;
}

export const PROTOCOLS = ['grpc', 'grpcs', 'http', 'https', 'tcp', 'tls', 'tls_passthrough', 'udp'] as const;
const TIMEOUT = [1, 2147483646] as const;
/** PEM certificates and keys: a 16 KiB RSA key and a long chain fit. */
const PEM_MAX = 65536;

export const SERVICE_FIELDS: FieldSpecs = {
  name: { type: 'string', check: checkName },
  retries: { type: 'integer', default: 5, between: [0, 32767] },
  protocol: { type: 'string', default: 'http', required: true, oneOf: PROTOCOLS },
  host: { type: 'string', required: true, check: checkHost, max: 255 },
  port: { type: 'integer', default: 80, required: true, between: [0, 65535] },
  path: { type: 'string', check: (v) => (v.startsWith('/') ? null : 'should start with: /') },
  connect_timeout: { type: 'integer', default: 60000, between: TIMEOUT },
  write_timeout: { type: 'integer', default: 60000, between: TIMEOUT },
  read_timeout: { type: 'integer', default: 60000, between: TIMEOUT },
  tags: TAGS,
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
  hosts: { type: 'set', check: checkRouteHost },
  paths: { type: 'set', check: checkRoutePath },
  headers: { type: 'map' },
  snis: { type: 'set', check: checkSni },
  sources: { type: 'json-array' },
  destinations: { type: 'json-array' },
  https_redirect_status_code: { type: 'integer', default: 426, required: true, oneOf: [426, 301, 302, 307, 308] },
  regex_priority: { type: 'integer', default: 0 },
  strip_path: { type: 'boolean', default: true, required: true },
  path_handling: { type: 'string', default: 'v0', oneOf: ['v0', 'v1'] },
  preserve_host: { type: 'boolean', default: false, required: true },
  request_buffering: { type: 'boolean', default: true, required: true },
  response_buffering: { type: 'boolean', default: true, required: true },
  tags: TAGS,
  service: { type: 'foreign' },
};

export const CONSUMER_FIELDS: FieldSpecs = {
  username: { type: 'string' },
  custom_id: { type: 'string' },
  tags: TAGS,
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
  tags: TAGS,
};

export const KEYAUTH_FIELDS: FieldSpecs = {
  consumer: { type: 'foreign', required: true },
  key: { type: 'string', check: checkHeaderSafeSecret },
  ttl: { type: 'integer', between: [0, 100000000] },
  tags: TAGS,
};

export const BASICAUTH_FIELDS: FieldSpecs = {
  consumer: { type: 'foreign', required: true },
  username: { type: 'string', required: true },
  password: { type: 'string', required: true },
  tags: TAGS,
};

export const ACL_FIELDS: FieldSpecs = {
  consumer: { type: 'foreign', required: true },
  group: { type: 'string', required: true },
  tags: TAGS,
};

export const CA_CERTIFICATE_FIELDS: FieldSpecs = {
  cert: { type: 'string', required: true, max: PEM_MAX },
  cert_digest: { type: 'string' },
  tags: TAGS,
};

export const CERTIFICATE_FIELDS: FieldSpecs = {
  cert: { type: 'string', required: true, max: PEM_MAX },
  key: { type: 'string', required: true, max: PEM_MAX },
  cert_alt: { type: 'string', max: PEM_MAX },
  key_alt: { type: 'string', max: PEM_MAX },
  tags: TAGS,
};

export const SNI_FIELDS: FieldSpecs = {
  name: { type: 'string', required: true, check: checkWildcardHost, max: 255 },
  certificate: { type: 'foreign', required: true },
  tags: TAGS,
};

const HASH_ON = ['none', 'consumer', 'ip', 'header', 'cookie', 'path', 'query_arg', 'uri_capture'] as const;

/** Kong: an upstream's name is a hostname: not an IP, no port (kong/db/schema/entities/upstreams.lua validate_name). */
function checkUpstreamName(v: string): string | null {
  const host = checkHostWithOptionalPort(v);
  if (host !== null) return `Invalid name ('${v}'); must be a valid hostname`;
  if (checkSni(v) === 'must not be an IP') return `Invalid name ('${v}'); no ip addresses allowed`;
  if (checkHost(v) !== null) return `Invalid name ('${v}'); no port allowed`;
  return null;
}

export const UPSTREAM_FIELDS: FieldSpecs = {
  name: { type: 'string', required: true, check: checkUpstreamName, max: 255 },
  algorithm: { type: 'string', default: 'round-robin', oneOf: ['consistent-hashing', 'least-connections', 'round-robin', 'latency'] },
  hash_on: { type: 'string', default: 'none', oneOf: HASH_ON },
  hash_fallback: { type: 'string', default: 'none', oneOf: HASH_ON },
  hash_on_header: { type: 'string' },
  hash_fallback_header: { type: 'string' },
  hash_on_cookie: { type: 'string' },
  hash_on_cookie_path: { type: 'string', default: '/', check: (v) => (v.startsWith('/') ? null : 'should start with: /') },
  hash_on_query_arg: { type: 'string' },
  hash_fallback_query_arg: { type: 'string' },
  hash_on_uri_capture: { type: 'string' },
  hash_fallback_uri_capture: { type: 'string' },
  slots: { type: 'integer', default: 10000, between: [10, 65536] },
  healthchecks: { type: 'record' },
  tags: TAGS,
  host_header: { type: 'string', check: checkHostWithOptionalPort, max: 255 },
  client_certificate: { type: 'foreign' },
  use_srv_name: { type: 'boolean', default: false },
};

/** Kong's targets.lua validate_target: a name or IP with an optional port. */
function checkTarget(v: string): string | null {
  return checkHostWithOptionalPort(v) === null ? null : `Invalid target ('${v}'); not a valid hostname or ip address`;
}

export const TARGET_FIELDS: FieldSpecs = {
  upstream: { type: 'foreign', required: true },
  target: { type: 'string', required: true, check: checkTarget, max: 300 },
  weight: { type: 'integer', default: 100, between: [0, 65535] },
  tags: TAGS,
};

export const HMACAUTH_FIELDS: FieldSpecs = {
  consumer: { type: 'foreign', required: true },
  username: { type: 'string', required: true },
  secret: { type: 'string', check: checkHeaderSafeSecret },
  tags: TAGS,
};

export const JWT_ALGORITHMS = ['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'EdDSA'] as const;

export const JWT_FIELDS: FieldSpecs = {
  consumer: { type: 'foreign', required: true },
  key: { type: 'string' },
  secret: { type: 'string' },
  rsa_public_key: { type: 'string', max: PEM_MAX },
  algorithm: { type: 'string', default: 'HS256', oneOf: JWT_ALGORITHMS },
  tags: TAGS,
};

export const OAUTH2_FIELDS: FieldSpecs = {
  consumer: { type: 'foreign', required: true },
  name: { type: 'string', required: true },
  client_id: { type: 'string', check: checkHeaderSafeSecret },
  client_secret: { type: 'string', check: checkHeaderSafeSecret },
  hash_secret: { type: 'boolean', default: false, required: true },
  redirect_uris: { type: 'set', check: checkRedirectUri, max: 2048 },
  tags: TAGS,
  client_type: { type: 'string', default: 'confidential', required: true, oneOf: ['confidential', 'public'] },
};

/** oauth2/daos.lua validate_uri: scheme and host required, no fragment. */
function checkRedirectUri(v: string): string | null {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return `cannot parse '${v}'`;
  }
  if (u.host === '') return `cannot parse '${v}'`;
  if (v.includes('#')) return `fragment not allowed in '${v}'`;
  return null;
}

/** `url` shorthand (Kong's kong/db/schema/entities/services.lua): sets protocol/host/port/path; default port by scheme. */
export function applyServiceUrl(url: unknown, value: Record<string, unknown>, errors: FlatErrors): void {
  if (typeof url !== 'string') {
    errors.url = 'expected a string';
    return;
  }
  const parts = splitServiceUrl(url);
  if (typeof parts === 'string') {
    errors.url = parts;
    return;
  }
  const protocol = parts.scheme.toLowerCase();
  value.protocol = protocol;
  value.host = parts.host;
  value.port = parts.port ?? (protocol === 'https' || protocol === 'grpcs' || protocol === 'tls' ? 443 : 80);
  value.path = parts.path;
}

/**
 * `scheme://host[:port][/path]` in one pass (no regex: issue 12). Returns
 * Kong's message ("missing host in url", "invalid url") when it does not fit.
 */
function splitServiceUrl(url: string): { scheme: string; host: string; port: number | null; path: string | null } | string {
  const sep = url.indexOf('://');
  if (sep < 0) return 'missing host in url';
  const scheme = url.slice(0, sep);
  for (let i = 0; i < scheme.length; i++) {
    const c = scheme.charCodeAt(i);
    const alpha = (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (!(alpha || (i > 0 && ((c >= 48 && c <= 57) || c === 43 || c === 45 || c === 46)))) return 'invalid url';
  }
  if (scheme === '') return 'invalid url';
  const rest = url.slice(sep + 3);
  let i = 0;
  let host: string;
  if (rest.startsWith('[')) {
    const close = rest.indexOf(']');
    if (close < 2) return close < 0 ? 'invalid url' : 'missing host in url';
    host = rest.slice(1, close);
    i = close + 1;
  } else {
    while (i < rest.length && !'/?#:[]'.includes(rest[i] as string)) i++;
    host = rest.slice(0, i);
  }
  if (host === '') return 'missing host in url';
  let port: number | null = null;
  if (rest[i] === ':') {
    const start = ++i;
    while (i < rest.length && rest.charCodeAt(i) >= 48 && rest.charCodeAt(i) <= 57) i++;
    if (i === start || i - start > 5) return 'invalid url';
    port = Number(rest.slice(start, i));
  }
  if (i === rest.length) return { scheme, host, port, path: null };
  if (rest[i] !== '/') return 'invalid url';
  const path = rest.slice(i);
  if (path.includes('?') || path.includes('#')) return 'invalid url';
  return { scheme, host, port, path };
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

/** An http(s) route needs one of methods, hosts, headers or paths (snis too for https): Kong's kong/db/schema/entities/routes_subschemas.lua. */
export function checkRouteMatchers(value: Record<string, unknown>, errors: FlatErrors): void {
  const protocols = (value.protocols as string[] | null) ?? [];
  const set = (f: string): boolean => {
    const v = value[f];
    return v !== null && v !== undefined && (Array.isArray(v) ? v.length > 0 : Object.keys(v as object).length > 0);
  };
  // Kong skips an entity check whose fields already failed (kong/db/schema/init.lua run_entity_checks).
  if (['methods', 'hosts', 'headers', 'paths', 'snis', 'protocols'].some((f) => f in errors)) return;
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

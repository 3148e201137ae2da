/**
 * Kong 3.9 entity shapes as the admin API returns them (Kong's kong/db/schema/entities/*.lua).
 * The admin API and store (src/gateway/admin, src/gateway/store) produce them;
 * the proxy (src/gateway/proxy) and plugins (src/gateway/plugins) consume a
 * read-only snapshot of them. Unset fields are null, timestamps integer seconds.
 */

export type Uuid = string;
export interface ForeignKey {
  id: Uuid;
}

export interface Service {
  id: Uuid;
  created_at: number;
  updated_at: number;
  name: string | null;
  retries: number;
  protocol: 'http' | 'https' | 'grpc' | 'grpcs' | 'tcp' | 'tls' | 'tls_passthrough' | 'udp';
  host: string;
  port: number;
  path: string | null;
  connect_timeout: number;
  write_timeout: number;
  read_timeout: number;
  tags: string[] | null;
  client_certificate: ForeignKey | null;
  tls_verify: boolean | null;
  tls_verify_depth: number | null;
  ca_certificates: Uuid[] | null;
  enabled: boolean;
}

export interface Route {
  id: Uuid;
  created_at: number;
  updated_at: number;
  name: string | null;
  protocols: string[];
  methods: string[] | null;
  hosts: string[] | null;
  paths: string[] | null;
  headers: Record<string, string[]> | null;
  snis: string[] | null;
  sources: unknown[] | null;
  destinations: unknown[] | null;
  https_redirect_status_code: 426 | 301 | 302 | 307 | 308;
  regex_priority: number;
  strip_path: boolean;
  path_handling: 'v0' | 'v1';
  preserve_host: boolean;
  request_buffering: boolean;
  response_buffering: boolean;
  tags: string[] | null;
  service: ForeignKey | null;
}

export interface Consumer {
  id: Uuid;
  created_at: number;
  updated_at: number;
  username: string | null;
  custom_id: string | null;
  tags: string[] | null;
}

export interface Plugin {
  id: Uuid;
  name: string;
  instance_name: string | null;
  created_at: number;
  updated_at: number;
  route: ForeignKey | null;
  service: ForeignKey | null;
  consumer: ForeignKey | null;
  /** Validated by the plugin's schema, defaults filled in. */
  config: Record<string, unknown>;
  protocols: string[];
  enabled: boolean;
  tags: string[] | null;
}

export interface KeyAuthCredential {
  id: Uuid;
  created_at: number;
  consumer: ForeignKey;
  key: string;
  ttl: number | null;
  tags: string[] | null;
}

export interface BasicAuthCredential {
  id: Uuid;
  created_at: number;
  consumer: ForeignKey;
  username: string;
  /** The stored hash, never the password (see src/gateway/model/password.ts). */
  password: string;
  tags: string[] | null;
}

export interface AclGroup {
  id: Uuid;
  created_at: number;
  consumer: ForeignKey;
  group: string;
  tags: string[] | null;
}

export interface CaCertificate {
  id: Uuid;
  created_at: number;
  cert: string;
  cert_digest: string;
  tags: string[] | null;
}

/** A TLS certificate the proxy serves for its SNIs (Kong's kong/db/schema/entities/certificates.lua). */
export interface Certificate {
  id: Uuid;
  created_at: number;
  updated_at: number;
  cert: string;
  /** PEM private key; never logged. */
  key: string;
  cert_alt: string | null;
  key_alt: string | null;
  tags: string[] | null;
}

/** A server name bound to a certificate (kong/db/schema/entities/snis.lua); `name` may start or end with `*`. */
export interface Sni {
  id: Uuid;
  created_at: number;
  updated_at: number;
  name: string;
  certificate: ForeignKey;
  tags: string[] | null;
}

/** Health-check settings of an upstream, Kong's defaults filled in (kong/db/schema/entities/upstreams.lua). */
export interface UpstreamHealthchecks {
  threshold: number;
  active: {
    type: 'tcp' | 'http' | 'https' | 'grpc' | 'grpcs';
    timeout: number;
    concurrency: number;
    http_path: string;
    https_sni: string | null;
    https_verify_certificate: boolean;
    headers: Record<string, string[]> | null;
    healthy: { interval: number; http_statuses: number[]; successes: number };
    unhealthy: { interval: number; http_statuses: number[]; tcp_failures: number; timeouts: number; http_failures: number };
  };
  passive: {
    type: 'tcp' | 'http' | 'https' | 'grpc' | 'grpcs';
    healthy: { http_statuses: number[]; successes: number };
    unhealthy: { http_statuses: number[]; tcp_failures: number; timeouts: number; http_failures: number };
  };
}

/** A load-balanced virtual host: a service whose host equals `name` balances over its targets. */
export interface Upstream {
  id: Uuid;
  created_at: number;
  updated_at: number;
  name: string;
  algorithm: 'round-robin' | 'consistent-hashing' | 'least-connections' | 'latency';
  hash_on: string;
  hash_fallback: string;
  hash_on_header: string | null;
  hash_fallback_header: string | null;
  hash_on_cookie: string | null;
  hash_on_cookie_path: string;
  hash_on_query_arg: string | null;
  hash_fallback_query_arg: string | null;
  hash_on_uri_capture: string | null;
  hash_fallback_uri_capture: string | null;
  slots: number;
  healthchecks: UpstreamHealthchecks;
  tags: string[] | null;
  host_header: string | null;
  client_certificate: ForeignKey | null;
  use_srv_name: boolean;
}

/** One backend of an upstream: `target` is always `host:port` (port 8000 when none was given, as Kong's targets DAO does). */
export interface Target {
  id: Uuid;
  /** Seconds with millisecond precision (Kong's auto_timestamp_ms). */
  created_at: number;
  updated_at: number;
  upstream: ForeignKey;
  target: string;
  weight: number;
  tags: string[] | null;
}

export interface HmacAuthCredential {
  id: Uuid;
  created_at: number;
  consumer: ForeignKey;
  username: string;
  secret: string;
  tags: string[] | null;
}

export interface JwtSecret {
  id: Uuid;
  created_at: number;
  consumer: ForeignKey;
  key: string;
  secret: string;
  rsa_public_key: string | null;
  algorithm: string;
  tags: string[] | null;
}

export interface OAuth2Credential {
  id: Uuid;
  created_at: number;
  consumer: ForeignKey;
  name: string;
  client_id: string;
  client_secret: string;
  hash_secret: boolean;
  redirect_uris: string[] | null;
  tags: string[] | null;
  client_type: 'confidential' | 'public';
}

/** The whole configuration, as the store holds it and the proxy reads it. */
export interface GatewayConfig {
  services: Service[];
  routes: Route[];
  consumers: Consumer[];
  plugins: Plugin[];
  keyauth_credentials: KeyAuthCredential[];
  basicauth_credentials: BasicAuthCredential[];
  acls: AclGroup[];
  ca_certificates: CaCertificate[];
  certificates: Certificate[];
  snis: Sni[];
  upstreams: Upstream[];
  targets: Target[];
  hmacauth_credentials: HmacAuthCredential[];
  jwt_secrets: JwtSecret[];
  oauth2_credentials: OAuth2Credential[];
}

/** A read-only view with a version that increases on every committed change. */
export interface ConfigSnapshot {
  readonly version: number;
  readonly config: Readonly<GatewayConfig>;
}

/**
 * A plugin's schema, as the admin API needs it: Kong's priority and version,
 * and a validator that fills Kong's config defaults or reports field errors
 * in Kong's shape (field path → message), e.g. {"config.minute": "..."}.
 */
export interface PluginSchemaDefinition {
  name: string;
  version: string;
  priority: number;
  /** key-auth, basic-auth, cors and acl cannot be scoped to a consumer. */
  consumerScopable: boolean;
  validate(config: unknown): { ok: true; config: Record<string, unknown> } | { ok: false; errors: Record<string, string> };
}

/**
 * Kong 3.9 entity shapes as the admin API returns them (../shared/reference/kong.md §1).
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

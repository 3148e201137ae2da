/**
 * What a plugin handler sees. Kong's phases reduced to the two these plugins
 * use (Kong's per-phase handler methods, kong/runloop/plugins_iterator.lua): `access` may end the request with an Exit; `header` adds
 * response headers to every response, including gateway-generated ones
 * (Kong's kong/pdk/response.lua: after an early exit the header filters of plugins that already
 * ran still apply).
 */
import type { IncomingMessage } from 'node:http';
import type { Consumer, PluginSchemaDefinition } from '../model/types.js';
import type { PrometheusExporter, PrometheusLogEntry } from './prometheus/exporter.js';

/** A gateway-generated response (kong.response.error). */
export interface Exit {
  status: number;
  message: string;
  /** Flat [name, value, name, value, …] pairs. */
  headers?: string[];
}

/** Per-request state shared by the proxy and the plugins. */
export interface RequestState {
  readonly req: IncomingMessage;
  readonly method: string;
  /** Normalised path, without the query string. */
  readonly path: string;
  /** The raw query string without `?`, or '' (a plugin may rewrite it). */
  query: string;
  readonly scheme: 'http' | 'https';
  /** Client IP, IPv4-mapped IPv6 unwrapped. */
  readonly clientIp: string;
  readonly serviceId: string;
  /** The matched route's id. */
  readonly routeId: string;
  consumer: Consumer | null;
  /** Kong's credential identifier (key-auth: credential id; basic-auth: username); null for anonymous. */
  credentialId: string | null;
  /** An auth plugin has already authenticated the request (for `anonymous` "logical OR"). */
  authenticated: boolean;
  /** Headers to set (value) or remove (null) upstream, lower-case names. */
  upstreamHeaders: Map<string, string | null> | null;
  /**
   * A request body follows, whatever its framing: a Content-Length other than 0, Transfer-Encoding
   * (HTTP/1.1), or HTTP/2 headers without END_STREAM (which may carry no length at all, issue 45).
   */
  readonly hasBody: boolean;
  /** The request body when a plugin buffered (and maybe rewrote) it. */
  body: Buffer | null;
  /** Response headers added by plugins' access phase (rate-limiting), flat pairs. */
  responseHeaders: string[] | null;
  /** First value of a request header (lower-case name), or undefined. */
  header(name: string): string | undefined;
  setUpstreamHeader(name: string, value: string | null): void;
  addResponseHeader(name: string, value: string): void;
  /** Reads the whole request body (at most `limit` bytes; null when over it). */
  readBody(limit: number): Promise<Buffer | null>;
}

/** Lookups a plugin may need, built once per configuration snapshot. */
export interface CompileEnv {
  consumerById: ReadonlyMap<string, Consumer>;
  consumerByUsername: ReadonlyMap<string, Consumer>;
  /** key-auth credentials by secretDigest(key) (util/constant-time.ts): the key itself is never a lookup key. */
  keyCredentialsByDigest: ReadonlyMap<string, { id: string; consumer: Consumer; expiresAt: number | null }>;
  basicCredentials: ReadonlyMap<string, { username: string; password: string; consumer: Consumer }>;
  groupsByConsumer: ReadonlyMap<string, readonly string[]>;
  /** The gateway's prometheus counters (one per process), or null when the proxy keeps none. */
  prometheus?: PrometheusExporter | null;
}

export type AccessResult = Exit | void;

/** A plugin instance compiled from one plugin row. */
export interface PluginRunner {
  readonly name: string;
  access?(state: RequestState): AccessResult | Promise<AccessResult>;
  /** Adds response headers (flat pairs) for this request. */
  header?(state: RequestState, out: string[]): void;
  /** Kong's log phase: the request is over (answered or cut); runs for every instance that applied, even after another plugin's exit. */
  log?(entry: PrometheusLogEntry): void;
}

export interface PluginHandler {
  /** Kong's name, the same as its schema's; the priority is the schema's. */
  readonly name: string;
  compile(config: Readonly<Record<string, unknown>>, env: CompileEnv): PluginRunner;
}

/** One plugin folder's declaration (its index.ts), listed once in plugins/index.ts. */
export interface BundledPlugin {
  schema: PluginSchemaDefinition;
  handler: PluginHandler;
}

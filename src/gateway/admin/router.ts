/**
 * A tiny path router so the admin API answers exactly like Kong: unknown
 * path → 404 {"message":"Not found"}, known path with another verb → 405
 * {"message":"Method not allowed"} (Kong's kong/api/api_helpers.lua).
 */
import type { PluginSchemaDefinition } from '../model/types.js';
import type { GatewayStore } from '../store/index.js';
import type { ParsedBody } from './body.js';

export interface AdminStats {
  totalRequests: number;
  connectionsAccepted: number;
  connectionsActive: number;
}

export interface AdminContext {
  store: GatewayStore;
  plugins: ReadonlyMap<string, PluginSchemaDefinition>;
  version: string;
  nodeInfo?: {
    hostname?: string;
    nodeId?: string;
    configuration?: Record<string, unknown>;
    pids?: { master: number; workers: number[] };
  };
  stats: AdminStats;
  nodeId: string;
  /** The proxy's configuration health (GET /status `proxy`). */
  proxyHealth?: () => unknown;
  /** The prometheus exposition (GET /metrics, Kong's kong/plugins/prometheus/api.lua); absent: 404. */
  metrics?: () => string;
  /** Hash of the last POST /config document (for ?check_hash=1). */
  lastConfigHash?: string;
}

export interface AdminRequest {
  ctx: AdminContext;
  method: string;
  /** Decoded path segments bound to `:name` placeholders, in order. */
  params: string[];
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  rawBody: Buffer | undefined;
  /** Parses the body on demand. @throws KongError 400/415 */
  body(): Promise<ParsedBody>;
}

export interface AdminResponse {
  status: number;
  body?: unknown;
  /** A plain-text body (GET /metrics) instead of JSON. */
  text?: string;
  headers?: Record<string, string>;
}

export type Handler = (req: AdminRequest) => AdminResponse | Promise<AdminResponse>;

export interface RouteDef {
  pattern: string;
  handlers: Record<string, Handler>;
}

interface Compiled {
  parts: string[];
  handlers: Record<string, Handler>;
}

export class Router {
  private readonly routes: Compiled[];
  constructor(defs: readonly RouteDef[]) {
    this.routes = defs.map((d) => ({ parts: d.pattern.split('/').filter(Boolean), handlers: d.handlers }));
  }

  /** First route whose shape matches; `null` when no route has this path. */
  match(segments: readonly string[]): { handlers: Record<string, Handler>; params: string[] } | null {
    for (const route of this.routes) {
      if (route.parts.length !== segments.length) continue;
      const params: string[] = [];
      let hit = true;
      for (let i = 0; i < segments.length; i++) {
        const p = route.parts[i] as string;
        if (p.startsWith(':')) params.push(segments[i] as string);
        else if (p !== segments[i]) {
          hit = false;
          break;
        }
      }
      if (hit) return { handlers: route.handlers, params };
    }
    return null;
  }
}

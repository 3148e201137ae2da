/**
 * The Kong 3.9 entities the proxy reads beyond those in model/types.ts:
 * certificates, SNIs, upstreams and targets (kong/db/schema/entities/
 * {certificates,snis,upstreams,targets}.lua). model/types.ts declares the
 * full entities the admin API stores; the proxy reads them through these
 * tolerant subsets (`proxyCollections`: a missing collection is empty,
 * Kong's defaults may be omitted), so a snapshot built by hand or from an
 * older state file still compiles.
 */
import type { ForeignKey, GatewayConfig, Uuid } from '../model/types.js';

export interface Certificate {
  id: Uuid;
  cert: string;
  key: string;
  cert_alt?: string | null;
  key_alt?: string | null;
  tags?: string[] | null;
}

export interface Sni {
  id: Uuid;
  /** A host name, `*.example.com` or `example.*` (Kong's wildcard SNIs). */
  name: string;
  certificate: ForeignKey;
}

export interface PassiveHealthcheck {
  type?: 'http' | 'https' | 'tcp' | 'grpc' | 'grpcs';
  healthy: { http_statuses: number[]; successes: number };
  unhealthy: { http_statuses: number[]; tcp_failures: number; timeouts: number; http_failures: number };
}

export interface Upstream {
  id: Uuid;
  name: string;
  algorithm?: 'round-robin' | 'consistent-hashing' | 'least-connections' | 'latency';
  slots?: number;
  host_header?: string | null;
  healthchecks?: {
    active?: { healthy?: { interval?: number }; unhealthy?: { interval?: number } } & Record<string, unknown>;
    passive?: PassiveHealthcheck;
    threshold?: number;
  };
}

export interface Target {
  id: Uuid;
  /** `host:port`, port defaulting to 8000 (Kong's targets.lua). */
  target: string;
  weight: number;
  upstream: ForeignKey;
  created_at?: number;
}

export interface ProxyCollections {
  certificates: readonly Certificate[];
  snis: readonly Sni[];
  upstreams: readonly Upstream[];
  targets: readonly Target[];
}

/** The certificate, SNI, upstream and target collections of a configuration (missing ones are empty). */
export function proxyCollections(config: Readonly<GatewayConfig>): ProxyCollections {
  const c = config as Readonly<GatewayConfig> & Partial<Record<keyof ProxyCollections, unknown>>;
  const list = <T>(v: unknown): readonly T[] => (Array.isArray(v) ? (v as T[]) : []);
  return { certificates: list(c.certificates), snis: list(c.snis), upstreams: list(c.upstreams), targets: list(c.targets) };
}

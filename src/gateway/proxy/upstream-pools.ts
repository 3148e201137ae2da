/**
 * One undici Pool per upstream (protocol, host, port, timeouts, CA set),
 * kept across snapshots so a configuration change does not drop warm
 * keep-alive connections. HTTPS upstreams are always verified: against the
 * service's ca_certificates when set, else the system roots.
 */
import { isIP } from 'node:net';
import { Pool } from 'undici';

export interface PoolSpec {
  protocol: 'http' | 'https';
  host: string;
  port: number;
  connectTimeout: number;
  /** PEM certificates to trust, or null for the system roots. */
  ca: string[] | null;
}

const KEEP_ALIVE_MS = 60_000;

export class UpstreamPools {
  private pools = new Map<string, Pool>();
  /**
   * Connections each pool opens at most (issue 45): past them requests wait in the pool's queue. Without
   * a cap, a flood of requests opened as many connections as the upstream would take (all 256 of FHIR's).
   */
  connections = 128;
  private used = new Set<string>();

  /** Marks the start of a compile; pools not requested before `sweep` are closed. */
  begin(): void {
    this.used = new Set();
  }

  get(spec: PoolSpec): Pool {
    const key = `${this.connections} ${JSON.stringify(spec)}`;
    this.used.add(key);
    let pool = this.pools.get(key);
    if (!pool) {
      const origin = `${spec.protocol}://${isIP(spec.host) === 6 ? `[${spec.host}]` : spec.host}:${spec.port}`;
      pool = new Pool(origin, {
        keepAliveTimeout: KEEP_ALIVE_MS,
        keepAliveMaxTimeout: KEEP_ALIVE_MS,
        pipelining: 1,
        connections: this.connections,
        connect: {
          timeout: spec.connectTimeout,
          ...(spec.protocol === 'https'
            ? { rejectUnauthorized: true, ...(spec.ca ? { ca: spec.ca } : {}), ...(isIP(spec.host) ? {} : { servername: spec.host }) }
            : {}),
        },
      });
      this.pools.set(key, pool);
    }
    return pool;
  }

  /** Closes pools the last compile did not use (in-flight requests finish first). */
  sweep(): void {
    for (const [key, pool] of this.pools) {
      if (!this.used.has(key)) {
        this.pools.delete(key);
        void pool.close().catch(() => undefined);
      }
    }
  }

  async closeAll(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.destroy().catch(() => undefined)));
  }
}

/**
 * The status listener (Kong's `status_listen`, kong.conf.default): GET /metrics
 * for Prometheus, apart from the admin API, so a scraper never needs the
 * admin port (Kong's kong/plugins/prometheus/status_api.lua). Other paths get
 * Kong's 404 `{"message":"Not found"}`, another verb on /metrics 405. Loopback
 * unless named explicitly, like the admin API; small and local, so the limits
 * are tight.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HospitalApiError } from '../../errors/index.js';
import type { ListenAddress } from '../../util/listen-address.js';
import { createBoundedHttpServer, type PlainHttpLimits } from '../../util/socket-guard.js';
import { safeEqual } from '../../util/constant-time.js';

export interface StatusServer {
  /** host:port as bound ([v6]:port). */
  address: string;
  close(): Promise<void>;
}

export type StatusListenerLimits = PlainHttpLimits;

/**
 * Scrapes are small and frequent. Every socket is bounded as the admin API's
 * (src/util/socket-guard.ts, issue 24): header, request, keep-alive and idle
 * time-outs, and at `maxConnections` a newcomer closes the idlest connection.
 */
export const STATUS_LISTENER_LIMITS: StatusListenerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 10_000,
  maxConnections: 64,
};

const PROMETHEUS_CONTENT_TYPE = 'text/plain; charset=UTF-8';

function json(res: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ message });
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Starts the status listener; resolves once it listens. @throws ERR_PORT_IN_USE */
export async function startStatusServer(
  at: ListenAddress,
  metrics: () => string,
  bounds: Partial<StatusListenerLimits> = {},
  token: string | null = null,
): Promise<StatusServer> {
  const limits: StatusListenerLimits = { ...STATUS_LISTENER_LIMITS, ...bounds };
  const expected = token === null ? null : `Bearer ${token}`;
  const server = createBoundedHttpServer(limits, (req: IncomingMessage, res: ServerResponse) => {
    // With a token (`--status-token-file`, issue 45), every path answers its holder only, as node_exporter's
    // web config guards its listener: another local account reads no metrics. Kong's own status listener has
    // no such setting (docs/operations.md says what that leaves on docker).
    if (expected !== null && !safeEqual(req.headers.authorization ?? '', expected)) {
      res.setHeader('www-authenticate', 'Bearer');
      return json(res, 401, 'Unauthorized');
    }
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path !== '/metrics') return json(res, 404, 'Not found');
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(res, 405, 'Method not allowed');
    try {
      const text = metrics();
      res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE, 'content-length': Buffer.byteLength(text) });
      res.end(req.method === 'HEAD' ? undefined : text);
    } catch (err) {
      process.stderr.write(`gateway: metrics failed (${(err as Error)?.name ?? 'error'})\n`);
      json(res, 500, 'An unexpected error occurred');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? new HospitalApiError('ERR_PORT_IN_USE', { host: at.host, port: at.port, detail: '' }, { cause: err }) : err);
    });
    server.listen(at.port, at.host, () => resolve());
  });
  const a = server.address() as AddressInfo;
  return {
    address: a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

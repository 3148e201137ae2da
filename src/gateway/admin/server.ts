/**
 * The Kong-compatible admin API (Kong's kong/api/endpoints.lua) on Fastify. Fastify's own
 * routing and body parsing are bypassed: one catch-all route hands every
 * request to our router so 404/405/415 bodies are exactly Kong's.
 * The logger is off: request bodies carry keys and passwords.
 */
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { isLoopbackPeer, isServiceCaller } from '../../util/local-peer.js';
import { createBoundedHttpServer, type PlainHttpLimits } from '../../util/socket-guard.js';
import Fastify from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import type { GatewayStore } from '../store/index.js';
import type { PluginSchemaDefinition } from '../model/types.js';
import { handleRequest, type AdminContext } from './dispatch.js';
import { requestOriginCheck } from './request-origin.js';

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; charset=UTF-8';

export interface AdminNodeInfo {
  hostname?: string;
  nodeId?: string;
  /** Shown under `configuration` in `GET /` (no secrets). */
  configuration?: Record<string, unknown>;
  pids?: { master: number; workers: number[] };
}

/**
 * Listener limits (issue 12: a client that sent headers and then trickled kept
 * its connection for minutes). A request whose headers or body take longer is
 * answered 408 and closed; an idle keep-alive connection is closed; a
 * connection with no request in progress for `idleTimeoutMs` (a silent one
 * too) is closed; at `maxConnections` a newcomer closes the idlest connection
 * (src/util/socket-guard.ts, issue 24). Admin requests are small and local, so
 * the defaults are tight.
 */
export type AdminListenerLimits = PlainHttpLimits;

export const ADMIN_LISTENER_LIMITS: AdminListenerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 10_000,
  maxConnections: 256,
};

export interface AdminServerOptions {
  host: string;
  port: number;
  /** Defaults to ADMIN_LISTENER_LIMITS. */
  limits?: Partial<AdminListenerLimits>;
  store: GatewayStore;
  plugins: ReadonlyMap<string, PluginSchemaDefinition>;
  version: string;
  nodeInfo?: AdminNodeInfo;
  /** The proxy's configuration health, shown as `proxy` in GET /status (src/gateway/proxy/gateway-proxy.ts). */
  proxyHealth?: () => unknown;
  /** The prometheus exposition served on GET /metrics (src/gateway/plugins/prometheus/exporter.ts). */
  metrics?: () => string;
  /** Who may call; default adminCallerAllowed. */
  callerAllowed?: (socket: Socket) => boolean | Promise<boolean>;
}

/**
 * A loopback caller must be the gateway's own user or root; an admin listener the operator put on
 * another address (Kong's admin_listen) answers that address as Kong does.
 */
export function adminCallerAllowed(socket: Socket): boolean | Promise<boolean> {
  return isLoopbackPeer(socket) ? isServiceCaller(socket) : true;
}

export interface AdminServer {
  url: string;
  close(): Promise<void>;
}

/** Starts the admin API; resolves once it listens. @throws ERR_PORT_IN_USE */
export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const limits = { ...ADMIN_LISTENER_LIMITS, ...options.limits };
  const app = Fastify({
    logger: false,
    bodyLimit: 16 * 1024 * 1024,
    serverFactory: (handler) => createBoundedHttpServer(limits, handler),
  });
  const ctx: AdminContext = {
    store: options.store,
    plugins: options.plugins,
    version: options.version,
    ...(options.nodeInfo ? { nodeInfo: options.nodeInfo } : {}),
    nodeId: options.nodeInfo?.nodeId ?? randomUUID(),
    ...(options.proxyHealth ? { proxyHealth: options.proxyHealth } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    stats: { totalRequests: 0, connectionsAccepted: 0, connectionsActive: 0 },
  };
  app.server.on('connection', (socket) => {
    ctx.stats.connectionsAccepted += 1;
    ctx.stats.connectionsActive += 1;
    socket.once('close', () => (ctx.stats.connectionsActive -= 1));
  });
  // Errors Fastify raises before our router runs (body too large, aborted
  // request) still get a Kong-style body, never a stack or the request body.
  app.setErrorHandler((err: { statusCode?: number }, _req, reply) => {
    const code = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    void reply
      .code(code)
      .header('content-type', 'application/json; charset=utf-8')
      .send(JSON.stringify({ message: code === 413 ? 'Request size limit exceeded' : code === 500 ? 'An unexpected error occurred' : 'Bad request' }));
  });
  // Decided before the body is read. A request a web page made a browser send (a rebound DNS name in Host,
  // another site's Origin) is refused (issue 43; ./request-origin.ts). The admin API hands out keys and
  // password hashes: on loopback it answers the gateway's own user and root only, not every local account
  // (issue 24; src/util/local-peer.ts).
  const allowed = options.callerAllowed ?? adminCallerAllowed;
  const browserRefusal = requestOriginCheck(options.host);
  app.addHook('onRequest', async (req, reply) => {
    const refusal =
      browserRefusal(req.headers, req.raw.socket.localPort) ??
      ((await allowed(req.raw.socket)) ? null : "The admin API answers the gateway's own user and root only");
    if (refusal === null) return;
    return reply.code(403).header('content-type', 'application/json; charset=utf-8').send(JSON.stringify({ message: refusal }));
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '*',
    handler: async (req, reply) => {
      ctx.stats.totalRequests += 1;
      const res = await handleRequest(ctx, {
        method: req.method,
        url: req.url,
        contentType: req.headers['content-type'],
        body: Buffer.isBuffer(req.body) ? req.body : undefined,
      });
      reply.code(res.status);
      // Kong's exporter.lua `collect`: text/plain with no version parameter.
      if (res.text !== undefined) return reply.header('content-type', PROMETHEUS_CONTENT_TYPE).send(res.text);
      if (res.body === undefined) return reply.send();
      reply.header('content-type', 'application/json; charset=utf-8');
      return reply.send(JSON.stringify(res.body));
    },
  });
  try {
    await app.listen({ host: options.host, port: options.port });
  } catch (err) {
    await app.close();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new HospitalApiError('ERR_PORT_IN_USE', { host: options.host, port: options.port, detail: '' }, { cause: err });
    }
    throw err;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return { url: `http://${host}:${port}`, close: () => app.close() };
}

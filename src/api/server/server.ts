/**
 * Runs the Hospital API: the public listener, the metrics listener (its own
 * Fastify instance, loopback by default) and graceful shutdown on SIGTERM /
 * SIGINT: stop accepting, let in-flight requests finish within
 * SHUTDOWN_GRACE_MS, then cut what is left and resolve.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import { safeEqual } from '../../util/constant-time.js';
import { guardSockets } from '../../util/socket-guard.js';
import { buildApp, listenerLimits, socketLimits, type BuildOptions, type HospitalApi } from './app.js';
import type { ApiConfig } from './config.js';

export interface RunningApi {
  api: HospitalApi;
  /** Base URL of the public listener. */
  url: string;
  /** Base URL of the metrics listener, or null when off. */
  metricsUrl: string | null;
  /** Graceful stop; resolves when everything is closed. */
  stop(): Promise<void>;
}

function urlOf(app: FastifyInstance): string {
  const a = app.server.address();
  if (!a || typeof a === 'string') return String(a);
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return `http://${host}:${a.port}`;
}

async function listen(app: FastifyInstance, host: string, port: number): Promise<void> {
  try {
    await app.listen({ host, port });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new HospitalApiError('ERR_PORT_IN_USE', { host, port, detail: '' }, { cause: err });
    }
    throw err;
  }
}

export async function startApi(config: ApiConfig, options: BuildOptions = {}): Promise<RunningApi> {
  const api = await buildApp(config, options);
  let metricsApp: FastifyInstance | null = null;
  try {
    if (config.metricsListen) {
      metricsApp = Fastify({ logger: false, ...listenerLimits(config) });
      guardSockets(metricsApp.server, socketLimits(config, Math.min(64, config.maxConnections)));
      const registry = api.context.metrics.registry;
      const token = config.metricsToken;
      metricsApp.get('/metrics', async (req, reply) => {
        // issue 45: with METRICS_TOKEN_FILE, only its holder (the service user, the Prometheus it runs) reads the
        // metrics, not every local account; compared in constant time, as the gateway's key-auth does
        if (token !== null && !safeEqual(String(req.headers.authorization ?? ''), `Bearer ${token}`)) {
          const err = new HospitalApiError('ERR_API_METRICS_UNAUTHORIZED', {});
          return reply.code(err.status).header('www-authenticate', 'Bearer realm="metrics"').type('application/json; charset=utf-8')
            .send(JSON.stringify({ error: { code: err.code, message: err.message, requestId: req.id } }));
        }
        return reply.type(registry.contentType).send(await registry.metrics());
      });
      await listen(metricsApp, config.metricsListen.host, config.metricsListen.port);
    }
    await listen(api.app, config.host, config.port);
  } catch (err) {
    await metricsApp?.close();
    await api.close();
    throw err;
  }

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      const server = api.app.server;
      const timer = setTimeout(() => server.closeAllConnections(), config.shutdownGraceMs);
      // Keep-alive connections that go idle once their request ends would hold close() open.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      timer.unref();
      try {
        await Promise.all([api.close(), metricsApp?.close()]);
      } finally {
        clearTimeout(timer);
        clearInterval(sweep);
      }
    })();
    return stopping;
  };
  return { api, url: urlOf(api.app), metricsUrl: metricsApp ? urlOf(metricsApp) : null, stop };
}

/** Resolves after the first SIGTERM or SIGINT has stopped the server. */
export function stopOnSignals(running: RunningApi, onSignal: (signal: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const handler = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', handler);
      process.off('SIGINT', handler);
      onSignal(signal);
      running.stop().then(resolve, reject);
    };
    process.on('SIGTERM', handler);
    process.on('SIGINT', handler);
  });
}

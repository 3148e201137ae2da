/**
 * The Hospital API as a Fastify app built from a config object, so tests can
 * start it in-process on port 0 and `serve` runs the same thing. Every
 * response carries X-Request-Id, always the server's own (a caller's is only
 * recorded, src/api/request/caller.ts); errors use {"error":{code,message,requestId}}.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyServerOptions, type FastifyInstance } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import { guardSockets, type SocketLimits } from '../../util/socket-guard.js';
import { openAuditLog, type AuditFs } from '../audit/audit.js';
import type { ApiConfig } from './config.js';
import type { ApiContext } from './context.js';
import { sendError, toApiError } from './error-reply.js';
import { createFhirClient } from '../fhir/fhir-client.js';
import { createMetrics } from './metrics.js';
import { createPlatformClient } from '../platform/platform-client.js';
import { registerHealthRoutes } from '../routes/health.js';
import { registerPatientsRoute } from '../routes/patients.js';
import { noteClientError } from '../request/client-error.js';

export interface BuildOptions {
  /** Fastify logger: false in tests, pino options to stderr in serve. */
  logger?: FastifyServerOptions['logger'];
  /** The audit log's file operations (tests put a disk that fails behind them); node:fs/promises by default. */
  auditFs?: AuditFs;
}

export interface HospitalApi {
  app: FastifyInstance;
  context: ApiContext;
  /** Stops the app, then the upstream clients and the audit log. */
  close(): Promise<void>;
}

/**
 * Time-outs and the connection cap of every Hospital API listener (the API and
 * its metrics listener). Node's http server answers 408 to a request whose
 * headers (HEADERS_TIMEOUT_MS) or whole body (REQUEST_TIMEOUT_MS) have not
 * arrived in time, so a client that trickles bytes is cut; IDLE_TIMEOUT_MS cuts
 * a socket on which nothing moves either way; MAX_CONNECTIONS refuses sockets
 * past the cap. Node checks those deadlines every connectionsCheckingInterval
 * (30 s by default), so it is set to a fraction of the smallest one.
 */
export function listenerLimits(config: ApiConfig): Pick<FastifyServerOptions, 'connectionTimeout' | 'keepAliveTimeout' | 'requestTimeout'> & {
  http: { headersTimeout: number; connectionsCheckingInterval: number };
} {
  return {
    connectionTimeout: config.idleTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    http: {
      headersTimeout: config.headersTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(config.headersTimeoutMs / 4))),
    },
  };
}

/**
 * Every socket of an API listener is bounded (issue 24, src/util/socket-guard.ts):
 * a connection with no request in progress for IDLE_TIMEOUT_MS is closed, and at
 * MAX_CONNECTIONS a newcomer closes the idlest connection instead of being refused.
 */
export function socketLimits(config: ApiConfig, maxConnections = config.maxConnections): SocketLimits {
  return {
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    keepAliveTimeoutMs: config.keepAliveTimeoutMs,
    // Plain HTTP: no handshake, so its deadline is the idle one.
    handshakeTimeoutMs: config.idleTimeoutMs,
    idleTimeoutMs: config.idleTimeoutMs,
    maxConnections,
  };
}

/** Builds the app (not listening). Opens the audit log and the upstream agents. */
export async function buildApp(config: ApiConfig, options: BuildOptions = {}): Promise<HospitalApi> {
  const fhir = createFhirClient(config);
  const audit = openAuditLog(config.auditLog, (health) => {
    // Once per change, not per request: the state is also in /api/ready and hospital_api_audit_writable.
    process.stderr.write(
      health.ok
        ? `hospital-api serve: audit log ${config.auditLog} is writable again; serving records\n`
        : `hospital-api serve: audit log ${config.auditLog} failed: ${health.reason}; no patient data is sent until it can be written\n`,
    );
  }, { ...(options.auditFs ? { fs: options.auditFs } : {}), ...(config.auditSeal ? { seal: config.auditSeal } : {}), onRepair: (bytes) => process.stderr.write(`hospital-api serve: audit log ${config.auditLog}: cut an unfinished last line (${bytes} bytes) before appending\n`),
    onSealKey: (e) => process.stderr.write('reloaded' in e ? `hospital-api serve: audit log seals are signed with the renewed certificate (SHA-256 ${e.reloaded})\n` : `hospital-api serve: audit seal files changed but cannot seal (${e.kept}); sealing with the certificate in use\n`) });
  const context: ApiContext = {
    config,
    platform: createPlatformClient(config),
    fhir,
    audit,
    // Certificate time left (issue 15): the install's certificates when run from one (HOSPITAL_API_DIR), and the CA it trusts; the audit log's state.
    metrics: createMetrics({ installDir: process.env.HOSPITAL_API_DIR || null, fhirCaPem: () => fhir.access().ca, auditOk: () => audit.health().ok }),
  };
  const app = Fastify({
    logger: options.logger ?? false,
    trustProxy: config.trustProxy as FastifyServerOptions['trustProxy'],
    bodyLimit: config.bodyLimit,
    ...listenerLimits(config),
    // Always the server's own: the caller's X-Request-Id is kept apart (callerRequestId).
    genReqId: () => randomUUID(),
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    // A route that counts itself says so (POST /api/patients: with its audit line; streamed replies bypass hooks).
    if ((request.routeOptions.config as { countsItself?: boolean } | undefined)?.countsItself) return;
    const route = request.routeOptions.url ?? 'unmatched';
    const outcome = reply.statusCode < 400 ? 'ok' : 'error';
    context.metrics.requests.inc({ route, outcome, status: reply.statusCode });
    context.metrics.duration.observe({ route, outcome }, reply.elapsedTime / 1000);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new HospitalApiError('ERR_API_NOT_FOUND', { method: request.method, path: request.url.split('?')[0] })),
  );
  // A route that needs to know its error (POST /api/patients, for its audit line) has its own onError hook.
  app.setErrorHandler((err, request, reply) => {
    const error = toApiError(err, config.bodyLimit);
    if (error.status >= 500) request.log.error({ code: error.code, message: error.message }, 'request failed');
    return sendError(request, reply, error);
  });

  registerHealthRoutes(app, context);
  registerPatientsRoute(app, context);
  await app.ready();
  // before Fastify's own handler writes its 408/400 to the socket: the request's audit line says so
  app.server.prependListener('clientError', noteClientError);
  guardSockets(app.server, socketLimits(config));

  return {
    app,
    context,
    async close() {
      await app.close();
      await Promise.allSettled([context.platform.close(), context.fhir.close()]);
      await context.audit.close();
    },
  };
}

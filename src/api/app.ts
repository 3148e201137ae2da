/**
 * The Hospital API as a Fastify app built from a config object, so tests can
 * start it in-process on port 0 and `serve` runs the same thing. Every
 * response carries X-Request-Id; errors use {"error":{code,message,requestId}}.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyServerOptions, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { HospitalApiError } from '../errors/index.js';
import { openAuditLog, type AuditLog } from './audit.js';
import type { ApiConfig } from './config.js';
import { createFhirClient, type FhirClient } from './fhir-client.js';
import { createMetrics, type ApiMetrics } from './metrics.js';
import { createPlatformClient, type PlatformClient } from './platform-client.js';
import { registerHealthRoutes } from './routes/health.js';
import { noteError, registerPatientsRoute } from './routes/patients.js';

export interface ApiContext {
  config: ApiConfig;
  platform: PlatformClient;
  fhir: FhirClient;
  audit: AuditLog;
  metrics: ApiMetrics;
  /** POST /api/patients in progress (bounded by config.maxConcurrentRequests). */
  inflight: number;
}

export interface BuildOptions {
  /** Fastify logger: false in tests, pino options to stderr in serve. */
  logger?: FastifyServerOptions['logger'];
}

export interface HospitalApi {
  app: FastifyInstance;
  context: ApiContext;
  /** Stops the app, then the upstream clients and the audit log. */
  close(): Promise<void>;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Maps anything thrown in a route to the wire error. */
export function toApiError(err: unknown, bodyLimit: number): HospitalApiError {
  if (err instanceof HospitalApiError) return err;
  const e = err as FastifyError;
  if (e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new HospitalApiError('ERR_API_BODY_TOO_LARGE', { limit: bodyLimit });
  const detail: Record<string, string> = {
    FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Content-Type must be application/json',
    FST_ERR_CTP_EMPTY_JSON_BODY: 'empty body',
    FST_ERR_CTP_INVALID_JSON_BODY: 'body is not valid JSON',
  };
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new HospitalApiError('ERR_API_BAD_REQUEST', { detail: detail[e.code] ?? 'malformed request' });
  }
  if (e instanceof SyntaxError) return new HospitalApiError('ERR_API_BAD_REQUEST', { detail: 'body is not valid JSON' });
  return new HospitalApiError('ERR_INTERNAL', { detail: 'unexpected error' }, { cause: err });
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

export function sendError(request: FastifyRequest, reply: FastifyReply, err: HospitalApiError): FastifyReply {
  if (err.code === 'ERR_API_BUSY' || err.code === 'ERR_API_AUDIT_UNAVAILABLE') reply.header('retry-after', '1');
  return reply
    .code(err.status)
    .type('application/json; charset=utf-8')
    .send({ error: { code: err.code, message: err.message, requestId: request.id } });
}

/** Builds the app (not listening). Opens the audit log and the upstream agents. */
export async function buildApp(config: ApiConfig, options: BuildOptions = {}): Promise<HospitalApi> {
  const fhir = createFhirClient(config);
  const context: ApiContext = {
    config,
    platform: createPlatformClient(config),
    fhir,
    audit: openAuditLog(config.auditLog, (health) => {
      // Once per change, not per request: the state is also in /api/ready.
      process.stderr.write(
        health.ok
          ? `hospital-api serve: audit log ${config.auditLog} is writable again; serving records\n`
          : `hospital-api serve: audit log ${config.auditLog} failed: ${health.reason}; no patient data is sent until it can be written\n`,
      );
    }),
    // Certificate days left (issue 15): the install's certificates when run from one (HOSPITAL_API_DIR), and the CA it trusts.
    metrics: createMetrics({ installDir: process.env.HOSPITAL_API_DIR || null, fhirCaPem: () => fhir.access().ca }),
    inflight: 0,
  };
  const app = Fastify({
    logger: options.logger ?? false,
    trustProxy: config.trustProxy as FastifyServerOptions['trustProxy'],
    bodyLimit: config.bodyLimit,
    ...listenerLimits(config),
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    if (route === '/api/patients') return; // counted with its audit line (streamed replies bypass hooks)
    const outcome = reply.statusCode < 400 ? 'ok' : 'error';
    context.metrics.requests.inc({ route, outcome, status: reply.statusCode });
    context.metrics.duration.observe({ route, outcome }, reply.elapsedTime / 1000);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new HospitalApiError('ERR_API_NOT_FOUND', { method: request.method, path: request.url.split('?')[0] })),
  );
  app.setErrorHandler((err, request, reply) => {
    const error = toApiError(err, config.bodyLimit);
    noteError(request, error);
    if (error.status >= 500) request.log.error({ code: error.code, message: error.message }, 'request failed');
    return sendError(request, reply, error);
  });

  registerHealthRoutes(app, context);
  registerPatientsRoute(app, context);
  await app.ready();
  app.server.maxConnections = config.maxConnections;

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

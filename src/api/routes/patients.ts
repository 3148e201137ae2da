/**
 * POST /api/patients (spec §2.1, §4.1 rule 2, §7): allow-list, validation,
 * access flow, patient lookup, then $everything streamed page by page as
 * {"resources":[…]}. A failure after the first byte destroys the socket so no
 * caller can mistake a truncated record for a complete one.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import type { AuditDecision } from '../audit.js';
import type { ApiContext } from '../app.js';
import { callerAllowed } from '../caller.js';
import type { EverythingStats } from '../fhir-client.js';

interface RequestState {
  start: bigint;
  platformCareId: string | null;
  fhirPatientId: string | null;
  decision: AuditDecision | null;
  code: string | null;
  stats: EverythingStats;
  bytes: number;
}

const states = new WeakMap<FastifyRequest, RequestState>();
const MAX_CARE_ID = 256;
const MAX_TOKEN = 8192;

/** Records the error of a request for its audit line (called by the app's error handler). */
export function noteError(request: FastifyRequest, err: HospitalApiError): void {
  const st = states.get(request);
  if (st) st.code = err.code;
}

function decisionFor(code: string | null, status: number): AuditDecision {
  if (code === 'ERR_API_ACCESS_DENIED' || code === 'ERR_API_CALLER_FORBIDDEN' || code === 'ERR_API_UPSTREAM_CREDENTIALS') {
    return 'denied';
  }
  return code === null && status < 400 ? 'granted' : 'error';
}

function validate(body: unknown): { platformCareId: string; token: string } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new HospitalApiError('ERR_API_BAD_REQUEST', { detail: 'body must be a JSON object' });
  }
  const { platformCareId, token } = body as Record<string, unknown>;
  if (typeof platformCareId !== 'string' || platformCareId.length === 0 || platformCareId.length > MAX_CARE_ID) {
    throw new HospitalApiError('ERR_API_BAD_REQUEST', { detail: `platformCareId must be a string of 1 to ${MAX_CARE_ID} characters` });
  }
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(platformCareId)) {
    throw new HospitalApiError('ERR_API_BAD_REQUEST', { detail: 'platformCareId holds control characters' });
  }
  // The token becomes a header value: printable ASCII only, bounded.
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN || !/^[\x20-\x7e]+$/.test(token)) {
    throw new HospitalApiError('ERR_API_BAD_REQUEST', { detail: `token must be printable ASCII of 1 to ${MAX_TOKEN} characters` });
  }
  return { platformCareId, token };
}

/** Writes to the raw response, waiting on back-pressure; throws if the caller went away. */
function writeRaw(reply: FastifyReply, st: RequestState, chunk: string | Buffer): Promise<void> {
  const raw = reply.raw;
  if (raw.destroyed) return Promise.reject(new Error('caller closed the connection'));
  st.bytes += Buffer.byteLength(chunk);
  if (raw.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      raw.off('drain', onDrain);
      raw.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () => done(new Error('caller closed the connection'));
    raw.on('drain', onDrain);
    raw.on('close', onClose);
  });
}

function finish(ctx: ApiContext, request: FastifyRequest, reply: FastifyReply, st: RequestState): void {
  const raw = reply.raw;
  const status = raw.statusCode;
  const aborted = !raw.writableFinished;
  const code = st.code ?? (aborted ? 'ERR_API_ABORTED' : null);
  const decision = st.decision ?? decisionFor(code, status);
  const durationMs = Number(process.hrtime.bigint() - st.start) / 1e6;
  ctx.audit.write({
    time: new Date().toISOString(),
    requestId: request.id,
    caller: request.ip,
    platformCareId: st.platformCareId,
    fhirPatientId: st.fhirPatientId,
    decision,
    code,
    pages: st.stats.pages,
    resources: st.stats.resources,
    bytes: st.bytes,
    durationMs: Math.round(durationMs * 10) / 10,
    status,
    aborted,
  });
  ctx.metrics.requests.inc({ route: '/api/patients', outcome: decision, status });
  ctx.metrics.duration.observe({ route: '/api/patients', outcome: decision }, durationMs / 1000);
  if (code && /^ERR_API_(PLATFORM|FHIR)_/.test(code)) {
    ctx.metrics.upstreamErrors.inc({ upstream: code.startsWith('ERR_API_PLATFORM') ? 'platform' : 'fhir', code });
  }
}

export function registerPatientsRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.post('/api/patients', {
    // ALLOWED_CALLERS first, before the body is even read: no upstream call for others.
    onRequest: async (request, reply) => {
      const st: RequestState = {
        start: process.hrtime.bigint(),
        platformCareId: null,
        fhirPatientId: null,
        decision: null,
        code: null,
        stats: { pages: 0, resources: 0 },
        bytes: 0,
      };
      states.set(request, st);
      reply.raw.once('close', () => finish(ctx, request, reply, st));
      if (!callerAllowed(ctx, request.ip)) {
        throw new HospitalApiError('ERR_API_CALLER_FORBIDDEN', { caller: request.ip });
      }
    },
    // Size of non-streamed replies (errors, {}), for the audit line.
    onSend: async (request, _reply, payload) => {
      const st = states.get(request);
      if (st && (typeof payload === 'string' || Buffer.isBuffer(payload))) st.bytes = Buffer.byteLength(payload);
      return payload;
    },
    handler: async (request, reply) => {
      const st = states.get(request) as RequestState;
      const { platformCareId, token } = validate(request.body);
      st.platformCareId = platformCareId;
      await ctx.platform.validateAccess(token, platformCareId);

      const ids = await ctx.fhir.findPatients(platformCareId);
      if (ids.length !== 1) {
        // Spec §2.2: no match → {}. Several matches → nobody's data (anchors.md §4 defect 2).
        st.decision = ids.length === 0 ? 'not-found' : 'ambiguous';
        return reply.type('application/json; charset=utf-8').send({});
      }
      const patientId = ids[0] as string;
      st.fhirPatientId = patientId;

      let started = false;
      let written = 0;
      const sink = async (entries: Buffer, count: number) => {
        ctx.metrics.pages.inc();
        ctx.metrics.resources.inc(count);
        if (!started) {
          started = true;
          // Fastify still logs its "request completed" line for a hijacked reply: none of our own.
          reply.hijack();
          reply.raw.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': request.id });
          await writeRaw(reply, st, '{"resources":[');
        }
        if (count === 0) return;
        if (written > 0) await writeRaw(reply, st, ',');
        written += count;
        await writeRaw(reply, st, entries);
      };
      try {
        await ctx.fhir.everything(patientId, sink, st.stats);
      } catch (err) {
        if (!started) throw err;
        // Headers are gone: cut the connection so the caller cannot parse a partial record.
        st.code = err instanceof HospitalApiError ? err.code : 'ERR_API_ABORTED';
        st.decision = 'error';
        request.log.error({ code: st.code, message: (err as Error).message }, 'record aborted mid-stream');
        reply.raw.destroy();
        return reply;
      }
      st.decision = 'granted';
      st.bytes += 2;
      await new Promise<void>((resolve) => reply.raw.end(']}', () => resolve()));
      return reply;
    },
  });
}

/**
 * POST /api/patients (spec §2.1, §4.1 rule 2, §7): allow-list, validation,
 * access flow, patient lookup, then $everything streamed page by page as
 * {"resources":[…]}. A failure after the first byte destroys the socket so no
 * caller can mistake a truncated record for a complete one.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import type { AuditDecision, AuditPhase, AuditRecord } from '../audit.js';
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
  /** The end line has been written (or attempted): the close handler must not write another. */
  ended: boolean;
  /** Counted in the concurrency cap, released on close. */
  counted: boolean;
  /** Counted in the request metrics: once per request, with the outcome the caller got. */
  metered: boolean;
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

/**
 * Writes to the raw response, waiting on back-pressure: the caller of this
 * function (the page loop) does not fetch another page until the response has
 * drained. A caller that takes nothing for `sendTimeoutMs` is cut
 * (ERR_API_CLIENT_STALLED), so a client that never reads holds at most the
 * pages already fetched, and only for that long.
 */
function writeRaw(reply: FastifyReply, st: RequestState, chunk: string | Buffer, sendTimeoutMs: number): Promise<void> {
  const raw = reply.raw;
  if (raw.destroyed) return Promise.reject(new Error('caller closed the connection'));
  st.bytes += Buffer.byteLength(chunk);
  if (raw.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (err?: Error) => {
      clearTimeout(timer);
      raw.off('drain', onDrain);
      raw.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () => done(new Error('caller closed the connection'));
    const timer = setTimeout(() => done(new HospitalApiError('ERR_API_CLIENT_STALLED', { ms: sendTimeoutMs })), sendTimeoutMs);
    raw.on('drain', onDrain);
    raw.on('close', onClose);
  });
}

function record(request: FastifyRequest, st: RequestState, phase: AuditPhase, fields: { decision: AuditDecision; code: string | null; status: number; aborted: boolean }): AuditRecord {
  const durationMs = Number(process.hrtime.bigint() - st.start) / 1e6;
  return {
    time: new Date().toISOString(),
    phase,
    requestId: request.id,
    caller: request.ip,
    platformCareId: st.platformCareId,
    fhirPatientId: st.fhirPatientId,
    decision: fields.decision,
    code: fields.code,
    pages: st.stats.pages,
    resources: st.stats.resources,
    bytes: st.bytes,
    durationMs: Math.round(durationMs * 10) / 10,
    status: fields.status,
    aborted: fields.aborted,
  };
}

/**
 * Counts a request in the metrics, once: a request whose end line fails is
 * retried as a cut record (`cut`), and must not be counted a second time.
 */
function meter(ctx: ApiContext, st: RequestState, outcome: AuditDecision, status: number, code: string | null): void {
  if (st.metered) return;
  st.metered = true;
  const seconds = Number(process.hrtime.bigint() - st.start) / 1e9;
  ctx.metrics.requests.inc({ route: '/api/patients', outcome, status });
  ctx.metrics.duration.observe({ route: '/api/patients', outcome }, seconds);
  if (code && /^ERR_API_(PLATFORM|FHIR)_/.test(code)) {
    ctx.metrics.upstreamErrors.inc({ upstream: code.startsWith('ERR_API_PLATFORM') ? 'platform' : 'fhir', code });
  }
}

/**
 * Writes the request's end line (once) and, when it is on disk, counts the
 * request in the metrics. Rejects with ERR_API_AUDIT_UNAVAILABLE, counting
 * nothing: the caller decides what the request became and meters that.
 */
async function writeEnd(ctx: ApiContext, request: FastifyRequest, st: RequestState, status: number, aborted: boolean): Promise<void> {
  st.ended = true;
  const code = st.code ?? (aborted ? 'ERR_API_ABORTED' : null);
  const decision = st.decision ?? decisionFor(code, status);
  await ctx.audit.write(record(request, st, 'end', { decision, code, status, aborted }));
  meter(ctx, st, decision, status, code);
}

/** The code of an end line that could not be written. */
function auditCode(err: unknown): string {
  return err instanceof HospitalApiError ? err.code : 'ERR_API_AUDIT_UNAVAILABLE';
}

/** Connection closed: release the concurrency slot; a request that ended without its line (caller gone) gets one now. */
function onClose(ctx: ApiContext, request: FastifyRequest, reply: FastifyReply, st: RequestState): void {
  if (st.counted) {
    st.counted = false;
    ctx.inflight -= 1;
  }
  if (st.ended) return;
  const raw = reply.raw;
  writeEnd(ctx, request, st, raw.statusCode, !raw.writableFinished).catch((err: Error) => {
    meter(ctx, st, 'error', raw.statusCode, auditCode(err));
    request.log.error({ code: (err as HospitalApiError).code, message: err.message }, 'audit line not written');
  });
}

export function registerPatientsRoute(app: FastifyInstance, ctx: ApiContext): void {
  const sendTimeoutMs = ctx.config.sendTimeoutMs;
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
        ended: false,
        counted: false,
        metered: false,
      };
      states.set(request, st);
      reply.raw.once('close', () => onClose(ctx, request, reply, st));
      if (!callerAllowed(ctx, request.ip)) {
        throw new HospitalApiError('ERR_API_CALLER_FORBIDDEN', { caller: request.ip });
      }
      // Bounded work: past the cap, answer 503 at once instead of queueing (and holding pages in memory).
      if (ctx.inflight >= ctx.config.maxConcurrentRequests) {
        throw new HospitalApiError('ERR_API_BUSY', { limit: ctx.config.maxConcurrentRequests });
      }
      ctx.inflight += 1;
      st.counted = true;
    },
    // Non-streamed replies (errors, {}): the end line is on disk before the reply goes out;
    // if it cannot be written, the reply becomes 503 ERR_API_AUDIT_UNAVAILABLE.
    onSend: async (request, reply, payload) => {
      const st = states.get(request);
      if (!st || st.ended) return payload;
      if (typeof payload === 'string' || Buffer.isBuffer(payload)) st.bytes = Buffer.byteLength(payload);
      try {
        await writeEnd(ctx, request, st, reply.statusCode, false);
        return payload;
      } catch (err) {
        const error = err instanceof HospitalApiError ? err : new HospitalApiError('ERR_INTERNAL', { detail: 'audit' });
        meter(ctx, st, 'error', error.status, error.code);
        request.log.error({ code: error.code, message: error.message }, 'audit line not written: reply replaced');
        reply.code(error.status).type('application/json; charset=utf-8');
        return JSON.stringify({ error: { code: error.code, message: error.message, requestId: request.id } });
      }
    },
    handler: async (request, reply) => {
      const st = states.get(request) as RequestState;
      const { platformCareId, token } = validate(request.body);
      st.platformCareId = platformCareId;
      await ctx.platform.validateAccess(token, platformCareId);

      const ids = await ctx.fhir.findPatients(platformCareId);
      if (ids.length !== 1) {
        // Spec §2.2: no match → {}. Several matches → nobody's data (the original health-tag portal took entry[0]).
        st.decision = ids.length === 0 ? 'not-found' : 'ambiguous';
        return reply.send({}); // application/json; charset=utf-8, as Fastify serialises an object
      }
      const patientId = ids[0] as string;
      st.fhirPatientId = patientId;

      // The caller left while the platform or the search answered: its end line is written
      // (onClose); fetch nothing for nobody and write no second line.
      if (st.ended) {
        reply.hijack();
        return reply;
      }
      // The record begins: its `started` line is on disk before anything is fetched or sent,
      // so even a SIGKILL mid-stream leaves a trace. Throws ERR_API_AUDIT_UNAVAILABLE (503).
      await ctx.audit.write(record(request, st, 'started', { decision: 'granted', code: null, status: 200, aborted: false }));

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
          await writeRaw(reply, st, '{"resources":[', sendTimeoutMs);
        }
        if (count === 0) return;
        if (written > 0) await writeRaw(reply, st, ',', sendTimeoutMs);
        written += count;
        await writeRaw(reply, st, entries, sendTimeoutMs);
      };
      const cut = async (err: unknown): Promise<FastifyReply> => {
        // Headers are gone: cut the connection so the caller cannot parse a partial record.
        st.code = err instanceof HospitalApiError ? err.code : 'ERR_API_ABORTED';
        st.decision = 'error';
        request.log.error({ code: st.code, message: (err as Error).message }, 'record aborted mid-stream');
        reply.raw.destroy();
        if (!st.ended) await writeEnd(ctx, request, st, 200, true).catch((e: unknown) => meter(ctx, st, 'error', 200, auditCode(e)));
        return reply;
      };
      try {
        await ctx.fhir.everything(patientId, sink, st.stats);
      } catch (err) {
        if (!started) throw err;
        return cut(err);
      }
      st.decision = 'granted';
      st.bytes += 2;
      try {
        // The outcome is on disk before the record is complete on the wire.
        await writeEnd(ctx, request, st, 200, false);
      } catch (err) {
        st.ended = false;
        return cut(err);
      }
      await new Promise<void>((resolve) => reply.raw.end(']}', () => resolve()));
      return reply;
    },
  });
}

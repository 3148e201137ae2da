/**
 * POST /api/patients (spec §2.1, §4.1 rule 2, §7): allow-list, body, access
 * flow, admission (src/api/request/admission.ts), patient lookup, then the record
 * (src/api/answer/record-stream.ts).
 * Each request's audit line and metrics count belong to its PatientRequest
 * (src/api/request/patient-request.ts); the route's hooks only tell it how it ends.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import { callerAllowed } from '../request/caller.js';
import type { ApiContext } from '../server/context.js';
import { Admission, AdmissionRefused } from '../request/admission.js';
import { errorPayload, toApiError } from '../server/error-reply.js';
import { PatientRequest } from '../request/patient-request.js';
import { readPatientsBody } from '../request/patients-body.js';
import { streamRecord } from '../answer/record-stream.js';

export function registerPatientsRoute(app: FastifyInstance, ctx: ApiContext): void {
  const states = new WeakMap<FastifyRequest, PatientRequest>();
  const stateOf = (request: FastifyRequest) => states.get(request) as PatientRequest;
  const { maxConcurrentRequests: slots, queueLength, queueTimeoutMs } = ctx.config;
  const admission = new Admission({
    slots,
    queueLength,
    queueTimeoutMs,
    onDepth: (depth) => ctx.metrics.queueDepth.set(depth),
    onWait: (seconds, outcome) => ctx.metrics.queueWait.observe({ outcome }, seconds),
  });

  app.post('/api/patients', {
    // Counted by its PatientRequest, with its audit line, not by the app's onResponse hook.
    config: { countsItself: true },

    // ALLOWED_CALLERS first, before the body is even read: no upstream call for others.
    // No slot here: a caller that sends headers and then trickles its body holds none (issue 24).
    onRequest: async (request, reply) => {
      const state = new PatientRequest(request, reply.raw, ctx);
      states.set(request, state);
      if (!callerAllowed(ctx.config.allowedCallers, request.ip)) {
        throw new HospitalApiError('ERR_API_CALLER_FORBIDDEN', { caller: request.ip });
      }
    },

    // Before the app's error handler answers: the code goes on the audit line.
    onError: async (request, _reply, error) => {
      stateOf(request).failed(toApiError(error, ctx.config.bodyLimit).code);
    },

    // Replies that are not a record ({}, errors): the end line is on disk before the reply goes
    // out; if it cannot be written, the reply becomes 503 ERR_API_AUDIT_UNAVAILABLE.
    onSend: async (request, reply, payload) => {
      const refused = await stateOf(request).endReply(reply.statusCode, payload);
      return refused ? errorPayload(request, reply, refused) : payload;
    },

    handler: async (request, reply): Promise<FastifyReply> => {
      const state = stateOf(request);
      const { platformCareId, token } = readPatientsBody(request.body);
      state.forCareId(platformCareId);
      await ctx.platform.validateAccess(token, platformCareId);
      // A slot only for a whole body and a granted token, held until the connection closes; past the
      // slots a bounded FIFO wait, then 503 ERR_API_BUSY with Retry-After.
      state.holdSlot(await admit(state));
      // The audit file opens while the patient is searched: the next line (started, or the end of a {} answer) follows it.
      ctx.audit.prepare();
      const matches = await ctx.fhir.findPatients(platformCareId);
      if (matches.length !== 1) {
        // Spec §2.2: no match → {}. Several matches → nobody's data (the original health-tag portal took entry[0]).
        state.decide(matches.length === 0 ? 'not-found' : 'ambiguous');
        return reply.send({}); // application/json; charset=utf-8, as Fastify serialises an object
      }
      const [match] = matches as [{ id: string; system: string | null }];
      state.matchedBy(match.system);
      return streamRecord(ctx, state, reply, match.id);
    },
  });

  async function admit(state: PatientRequest): Promise<() => void> {
    try {
      return await admission.admit(state.left);
    } catch (err) {
      if (!(err instanceof AdmissionRefused)) throw err;
      // A caller that left is audited as aborted by its PatientRequest; nobody reads this reply.
      if (err.reason === 'left') throw new HospitalApiError('ERR_API_CALLER_LEFT', { detail: 'it left while queued' });
      throw new HospitalApiError('ERR_API_BUSY', {
        reason: err.reason === 'queue-full' ? `the queue is full (API_QUEUE_LENGTH=${queueLength})` : `this request waited API_QUEUE_TIMEOUT_MS=${queueTimeoutMs} ms without one`,
        limit: slots,
      });
    }
  }
}

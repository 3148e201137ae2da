/**
 * POST /api/patients (spec §2.1, §4.1 rule 2, §7): allow-list and concurrency
 * cap, body, access flow, patient lookup, then the record (src/api/record-stream.ts).
 * Each request's audit line and metrics count belong to its PatientRequest
 * (src/api/patient-request.ts); the route's hooks only tell it how it ends.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import { callerAllowed } from '../caller.js';
import type { ApiContext } from '../context.js';
import { errorPayload, toApiError } from '../error-reply.js';
import { PatientRequest } from '../patient-request.js';
import { readPatientsBody } from '../patients-body.js';
import { streamRecord } from '../record-stream.js';
import { Slots } from '../slots.js';

export function registerPatientsRoute(app: FastifyInstance, ctx: ApiContext): void {
  const states = new WeakMap<FastifyRequest, PatientRequest>();
  const stateOf = (request: FastifyRequest) => states.get(request) as PatientRequest;
  const slots = new Slots(ctx.config.maxConcurrentRequests);

  app.post('/api/patients', {
    // Counted by its PatientRequest, with its audit line, not by the app's onResponse hook.
    config: { countsItself: true },

    // ALLOWED_CALLERS first, before the body is even read: no upstream call for others.
    // Past MAX_CONCURRENT_REQUESTS, 503 at once instead of a queue holding pages in memory.
    onRequest: async (request, reply) => {
      const state = new PatientRequest(request, reply.raw, ctx);
      states.set(request, state);
      if (!callerAllowed(ctx.config.allowedCallers, request.ip)) {
        throw new HospitalApiError('ERR_API_CALLER_FORBIDDEN', { caller: request.ip });
      }
      const release = slots.take();
      if (!release) throw new HospitalApiError('ERR_API_BUSY', { limit: ctx.config.maxConcurrentRequests });
      state.holdSlot(release);
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
}

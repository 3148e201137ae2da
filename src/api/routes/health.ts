/**
 * GET /api/health-check: liveness only, 200 {} whenever the process serves,
 * open to every caller (spec §4.1 rule 1). GET /api/ready: readiness, checks
 * the platform and the FHIR gateway (with the key) and answers 503 with the
 * reasons otherwise. /api/ready obeys ALLOWED_CALLERS and shares one check per
 * READY_CACHE_MS, so callers cannot turn it into upstream load.
 */
import type { FastifyInstance } from 'fastify';
import { HospitalApiError, isHospitalApiError } from '../../errors/index.js';
import type { ApiContext } from '../app.js';
import { callerAllowed } from '../caller.js';

export const READY_CACHE_MS = 2_000;

interface ReadyResult {
  platform: string;
  fhir: string;
}

export function registerHealthRoutes(app: FastifyInstance, ctx: ApiContext): void {
  // Probes run every few seconds: their request lines would drown the log.
  app.get('/api/health-check', { logLevel: 'warn' }, async (_request, reply) => reply.type('application/json').send({}));

  // One check in flight or fresh at a time; failures are cached too (a down upstream is the costly case).
  let cached: { at: number; result: Promise<ReadyResult> } | null = null;
  const check = async (): Promise<ReadyResult> => {
    const [platform, fhir] = await Promise.allSettled([ctx.platform.ping(), ctx.fhir.ping()]);
    const why = (r: PromiseSettledResult<void>) =>
      r.status === 'fulfilled' ? 'ok' : isHospitalApiError(r.reason) ? r.reason.code : 'failed';
    return { platform: why(platform), fhir: why(fhir) };
  };

  app.get('/api/ready', { logLevel: 'warn' }, async (request) => {
    if (!callerAllowed(ctx, request.ip)) {
      throw new HospitalApiError('ERR_API_CALLER_FORBIDDEN', { caller: request.ip });
    }
    const now = Date.now();
    if (cached === null || now - cached.at >= READY_CACHE_MS) cached = { at: now, result: check() };
    const result = await cached.result;
    if (result.platform !== 'ok' || result.fhir !== 'ok') {
      throw new HospitalApiError('ERR_API_NOT_READY', { detail: `platform ${result.platform}, fhir ${result.fhir}` });
    }
    return result;
  });
}

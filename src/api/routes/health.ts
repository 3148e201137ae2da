/**
 * GET /api/health-check: liveness only, 200 {} whenever the process serves
 * (spec §4.1 rule 1). GET /api/ready: readiness, checks the platform and the
 * FHIR gateway (with the key) and answers 503 with the reasons otherwise.
 */
import type { FastifyInstance } from 'fastify';
import { HospitalApiError, isHospitalApiError } from '../../errors/index.js';
import type { ApiContext } from '../app.js';

export function registerHealthRoutes(app: FastifyInstance, ctx: ApiContext): void {
  // Probes run every few seconds: their request lines would drown the log.
  app.get('/api/health-check', { logLevel: 'warn' }, async (_request, reply) => reply.type('application/json').send({}));

  app.get('/api/ready', { logLevel: 'warn' }, async () => {
    const [platform, fhir] = await Promise.allSettled([ctx.platform.ping(), ctx.fhir.ping()]);
    const why = (r: PromiseSettledResult<void>) =>
      r.status === 'fulfilled' ? 'ok' : isHospitalApiError(r.reason) ? r.reason.code : 'failed';
    const result = { platform: why(platform), fhir: why(fhir) };
    if (result.platform !== 'ok' || result.fhir !== 'ok') {
      throw new HospitalApiError('ERR_API_NOT_READY', { detail: `platform ${result.platform}, fhir ${result.fhir}` });
    }
    return result;
  });
}

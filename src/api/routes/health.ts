/**
 * GET /api/health-check: liveness only, 200 {} whenever the process serves,
 * open to every caller (spec §4.1 rule 1). GET /api/ready: readiness, checks
 * the platform and the FHIR gateway (with the key) and answers 503 with the
 * reasons otherwise (the audit log too: no record goes out while it cannot be
 * written). It answers within READY_DEADLINE_MS. /api/ready obeys ALLOWED_CALLERS and shares one check per
 * READY_CACHE_MS, so callers cannot turn it into upstream load.
 */
import type { FastifyInstance } from 'fastify';
import { HospitalApiError, isHospitalApiError } from '../../errors/index.js';
import type { ApiContext } from '../server/context.js';
import { callerAllowed } from '../request/caller.js';

export const READY_CACHE_MS = 2_000;
/** /api/ready answers within this, whatever hangs behind it (each upstream probe is bounded by it too). */
export const READY_DEADLINE_MS = 1_000;

interface ReadyResult {
  platform: string;
  fhir: string;
  audit: string;
}

export function registerHealthRoutes(app: FastifyInstance, ctx: ApiContext): void {
  // Probes run every few seconds: their request lines would drown the log.
  // Fastify serialises the object as application/json; charset=utf-8.
  app.get('/api/health-check', { logLevel: 'warn' }, async () => ({}));

  // One check in flight or fresh at a time; failures are cached too (a down upstream is the costly case).
  let cached: { at: number; result: Promise<ReadyResult> } | null = null;
  // The audit log: known bad after a failed write; then each check tries a probe line, so a log
  // that is writable again is noticed without waiting for a patient request.
  const auditCheck = async (): Promise<void> => {
    if (ctx.audit.health().ok) return;
    await ctx.audit.write({ time: new Date().toISOString(), phase: 'probe', detail: 'readiness check: audit log writable again' });
  };
  const check = async (): Promise<ReadyResult> => {
    const deadline = (p: Promise<void>): Promise<void> => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((_resolve, reject) => {
        timer = setTimeout(() => reject(new HospitalApiError('ERR_API_NOT_READY', { detail: `no answer within ${READY_DEADLINE_MS} ms` })), READY_DEADLINE_MS);
      });
      return Promise.race([p, late]).finally(() => clearTimeout(timer));
    };
    const [platform, fhir, audit] = await Promise.allSettled([
      deadline(ctx.platform.ping(READY_DEADLINE_MS)),
      deadline(ctx.fhir.ping(READY_DEADLINE_MS)),
      deadline(auditCheck()),
    ]);
    const why = (r: PromiseSettledResult<void>) =>
      r.status === 'fulfilled' ? 'ok' : isHospitalApiError(r.reason) ? (r.reason.code === 'ERR_API_NOT_READY' ? 'timeout' : r.reason.code) : 'failed';
    return { platform: why(platform), fhir: why(fhir), audit: why(audit) };
  };

  app.get('/api/ready', { logLevel: 'warn' }, async (request) => {
    if (!callerAllowed(ctx.config.allowedCallers, request.ip)) {
      throw new HospitalApiError('ERR_API_CALLER_FORBIDDEN', { caller: request.ip });
    }
    const now = Date.now();
    if (cached === null || now - cached.at >= READY_CACHE_MS) cached = { at: now, result: check() };
    const result = await cached.result;
    if (result.platform !== 'ok' || result.fhir !== 'ok' || result.audit !== 'ok') {
      throw new HospitalApiError('ERR_API_NOT_READY', { detail: `platform ${result.platform}, fhir ${result.fhir}, audit ${result.audit}` });
    }
    return result;
  });
}

/** Errors on the FHIR surface: an OperationOutcome with the registry's status (http://hl7.org/fhir/R4/operationoutcome.html). */
import { toHospitalApiError, type HospitalApiError } from '../../errors/index.js';

export interface OperationOutcome {
  resourceType: 'OperationOutcome';
  issue: Array<{ severity: 'fatal' | 'error' | 'warning' | 'information'; code: string; diagnostics?: string; details?: { text: string }; expression?: string[] }>;
}

/** R4 IssueType for an HTTP status. */
function issueCode(status: number): string {
  if (status < 400) return 'informational';
  if (status === 404 || status === 410) return 'not-found';
  if (status === 409 || status === 412) return 'conflict';
  if (status === 401 || status === 403) return 'security';
  if (status === 405 || status === 501) return 'not-supported';
  if (status === 406 || status === 415) return 'not-supported';
  if (status === 422) return 'business-rule';
  if (status >= 500) return 'exception';
  return 'invalid';
}

export function outcome(status: number, message: string, code?: string): OperationOutcome {
  return {
    resourceType: 'OperationOutcome',
    issue: [{ severity: status < 400 ? 'information' : status >= 500 ? 'fatal' : 'error', code: issueCode(status), diagnostics: message, ...(code ? { details: { text: code } } : {}) }],
  };
}

/** Any thrown value → [status, OperationOutcome]; Fastify's own errors keep their 4xx status. */
export function errorOutcome(err: unknown): [number, OperationOutcome, HospitalApiError | undefined] {
  const fastifyStatus = (err as { statusCode?: unknown })?.statusCode;
  const fastifyCode = (err as { code?: unknown })?.code;
  if (typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500 && typeof fastifyCode === 'string' && fastifyCode.startsWith('FST_')) {
    return [fastifyStatus, outcome(fastifyStatus, (err as Error).message, fastifyCode), undefined];
  }
  if (err instanceof SyntaxError || err instanceof URIError) return [400, outcome(400, `Invalid JSON: ${err.message}`), undefined];
  const e = toHospitalApiError(err);
  const oo = outcome(e.status, e.message, e.code);
  // validation errors carry one issue per failing path (FHIRPath in `expression`)
  const issues = (e.cause as { issues?: unknown } | undefined)?.issues;
  if (Array.isArray(issues)) {
    for (const i of issues as Array<{ code?: string; details?: { text?: string }; expression?: string[] }>) {
      oo.issue.push({
        severity: 'error',
        code: typeof i.code === 'string' ? i.code : 'invalid',
        ...(i.details?.text ? { diagnostics: i.details.text } : {}),
        ...(Array.isArray(i.expression) ? { expression: i.expression } : {}),
      });
    }
  }
  return [e.status, oo, e];
}

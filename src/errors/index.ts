/**
 * HospitalApiError: a stable code, a human message, and the status/exit/hint
 * the registry gives that code. Throw it anywhere; each surface (CLI, Hospital
 * API, gateway, FHIR) maps it to its own wire shape.
 */
import { registry, type ErrorCode } from './registry.js';

export type { ErrorCode } from './registry.js';
export type ErrorParams = Record<string, string | number | undefined>;

function fill(template: string, params: ErrorParams): string {
  return template.replace(/\{(\w+)\}/g, (_, key: string) => {
    const value = params[key];
    return value === undefined ? '' : String(value);
  });
}

export class HospitalApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly exit: number;
  readonly hint: string | undefined;
  readonly params: ErrorParams;

  constructor(code: ErrorCode, params: ErrorParams = {}, options?: { cause?: unknown }) {
    const def = registry[code];
    if (!def) throw new Error(`unregistered error code ${code}`);
    super(fill(def.message, params), options);
    this.name = 'HospitalApiError';
    this.code = code;
    this.status = def.status;
    this.exit = def.exit;
    this.hint = def.hint === undefined ? undefined : fill(def.hint, params);
    this.params = params;
  }
}

/**
 * The same error with `params` added where it had none: a command fills what
 * the code that threw could not know, such as `{dirFlag}` (` --dir <install
 * dir>`) in a hint that names another command (issue 48).
 */
export function withParams(err: HospitalApiError, params: ErrorParams): HospitalApiError {
  const missing = Object.fromEntries(Object.entries(params).filter(([k]) => err.params[k] === undefined));
  if (Object.keys(missing).length === 0) return err;
  return new HospitalApiError(err.code, { ...err.params, ...missing }, { cause: err.cause ?? err });
}

export function isHospitalApiError(err: unknown): err is HospitalApiError {
  return err instanceof HospitalApiError;
}

/** Wraps anything thrown into a HospitalApiError (ERR_INTERNAL for the unknown). */
export function toHospitalApiError(err: unknown): HospitalApiError {
  if (err instanceof HospitalApiError) return err;
  const detail = err instanceof Error ? err.message : String(err);
  return new HospitalApiError('ERR_INTERNAL', { detail }, { cause: err });
}

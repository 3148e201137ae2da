/**
 * Runs checks in their declared order (the expiry check reads what the
 * certificate check found), each with a time-out and a crash guard: a throw
 * or a time-out becomes `error`, never a crashed verify (as flutter_tools' doctor.dart startValidatorTasks).
 */
import type { Check, CheckContext, CheckOutcome, CheckResult } from './types.js';

const DEFAULT_TIMEOUT_MS = 60_000;

function withTimeout(promise: Promise<CheckOutcome>, ms: number): Promise<CheckOutcome> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<CheckOutcome>((resolve) => {
    timer = setTimeout(() => resolve({ status: 'error', summary: `timed out after ${ms} ms`, detail: '' }), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export async function runChecks(
  checks: readonly Check[],
  ctx: CheckContext,
  onResult: (result: CheckResult) => void = () => {},
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const check of checks) {
    const started = performance.now();
    let outcome: CheckOutcome;
    try {
      outcome = await withTimeout(check.run(ctx), check.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    } catch (err) {
      outcome = { status: 'error', summary: (err as Error).message ?? String(err), detail: '' };
    }
    const result: CheckResult = {
      id: check.id,
      spec: check.spec,
      title: check.title,
      mandatory: check.mandatory,
      ...outcome,
      durationMs: Math.round(performance.now() - started),
    };
    results.push(result);
    onResult(result);
  }
  return results;
}

/**
 * The mandatory checks whose skip is not a failure: the admin port on a host with no other address
 * to probe, and the per-host gateway probe on a runtime with one host (its gateway was probed).
 */
const SKIP_IS_NOT_A_FAILURE: ReadonlySet<string> = new Set(['admin-not-exposed', 'gateway-nodes']);

/** verify exits 0 only when every mandatory check passes (a skip is not a pass, but for those above). */
export function allMandatoryPass(results: readonly CheckResult[]): boolean {
  return results.every((r) => !r.mandatory || r.status === 'pass' || (r.status === 'skip' && SKIP_IS_NOT_A_FAILURE.has(r.id)));
}

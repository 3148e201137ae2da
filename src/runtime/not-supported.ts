/**
 * Day-two operations (issue 15) are optional on a Runtime: dayTwo() returns
 * them all, each one the runtime lacks failing with ERR_MAINT_NOT_SUPPORTED and
 * saying what to do by hand instead. The native, systemd and docker runtimes
 * have all four (docker: src/runtime/docker/day-two.ts); this stays the one
 * place a runtime without one is named.
 */
import { HospitalApiError } from '../errors/index.js';
import type { Runtime } from './types.js';

export type DayTwoOps = Required<Pick<Runtime, 'reloadApiKey' | 'reloadGatewayTls' | 'snapshotData' | 'restoreData'>>;

const HINTS: Record<keyof DayTwoOps, [string, string]> = {
  reloadApiKey: [
    'Switching the Hospital API to a new key without a restart',
    'Run `consumer rotate-key <name>` without --write-env, put the printed key in hospital-api.env as FHIR_API_KEY, restart the Hospital API, then `consumer revoke-key <name> <old key id>`.',
  ],
  reloadGatewayTls: [
    'Reloading the gateway certificate without downtime',
    'Restart the gateway after `cert renew` has replaced the files in <dir>/tls/.',
  ],
  snapshotData: ['Backup', 'Stop the stack and copy the FHIR store and the gateway state by hand.'],
  restoreData: ['Restore', 'Put the FHIR store and the gateway state back by hand before the first `up`.'],
};

function missing(runtime: Runtime, op: keyof DayTwoOps): never {
  const [what, hint] = HINTS[op];
  throw new HospitalApiError('ERR_MAINT_NOT_SUPPORTED', { what, runtime: runtime.name, hint });
}

export function dayTwo(runtime: Runtime): DayTwoOps {
  return {
    reloadApiKey: () => (runtime.reloadApiKey ? runtime.reloadApiKey() : missing(runtime, 'reloadApiKey')),
    reloadGatewayTls: () => (runtime.reloadGatewayTls ? runtime.reloadGatewayTls() : missing(runtime, 'reloadGatewayTls')),
    snapshotData: (into, progress) => (runtime.snapshotData ? runtime.snapshotData(into, progress) : missing(runtime, 'snapshotData')),
    restoreData: (from, parts) => (runtime.restoreData ? runtime.restoreData(from, parts) : missing(runtime, 'restoreData')),
  };
}

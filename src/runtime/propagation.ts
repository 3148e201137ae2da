/**
 * A change through the gateway's admin API (a new consumer, a new key) reaches a gateway
 * that runs on several hosts only when each proxy next reads the database: Kong's proxies
 * poll the cluster events every db_update_frequency seconds and then purge what they cached
 * (Kong/kong kong.conf.default, "DATASTORE CACHE": db_update_frequency, db_update_propagation,
 * 0 on Postgres). A runtime with such a gateway says how long that may take
 * (Runtime.gatewayPropagationMs); the checks that need the latest change on every proxy ask
 * again within that time, and no longer, before they fail.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Runtime } from './types.js';

/** What the waits read: the runtime's propagation time (a CheckContext, or `{ runtime }`). */
export interface PropagationScope {
  runtime: Pick<Runtime, 'gatewayPropagationMs'>;
}

/** How often a check asks again while the change propagates. */
export const PROPAGATION_RETRY_MS = 500;

/**
 * Runs `attempt` until `passed` says yes or the runtime's propagation time has gone by
 * since the first attempt (once only when the runtime has none); the last result and
 * how long it took from the first attempt.
 */
export async function withinPropagation<T>(ctx: PropagationScope, attempt: () => Promise<T>, passed: (result: T) => boolean): Promise<{ result: T; waitedMs: number }> {
  const bound = ctx.runtime.gatewayPropagationMs ?? 0;
  const t0 = performance.now();
  for (;;) {
    const result = await attempt();
    const waitedMs = Math.round(performance.now() - t0);
    if (passed(result) || waitedMs >= bound) return { result, waitedMs };
    await sleep(Math.min(PROPAGATION_RETRY_MS, bound - waitedMs));
  }
}

/** For a check's detail: how long the gateway took, when it was not at once. */
export function propagationNote(ctx: PropagationScope, waitedMs: number): string {
  const bound = ctx.runtime.gatewayPropagationMs ?? 0;
  if (bound === 0 || waitedMs === 0) return '';
  return ` (asked again for ${(waitedMs / 1000).toFixed(1)} s: the gateway's proxies take up to ${(bound / 1000).toFixed(0)} s to serve a change)`;
}

/**
 * basic-auth password checks that wrong passwords cannot use to starve other
 * traffic (issue 14). Stored passwords are scrypt hashes (~35 ms of CPU each,
 * model/password.ts); a flood of guesses would otherwise keep libuv's pool and
 * the CPU busy. So:
 * - a verified (or refused) password is remembered for a short time, keyed
 *   by HMAC(per-process random key, stored hash + password): a client
 *   repeating its password, right or wrong, costs one HMAC. No password is
 *   ever held.
 * - at most MAX_IN_FLIGHT scrypt verifications run per proxy process, the
 *   rest wait in a bounded queue; when the queue is full the request gets
 *   503 with Retry-After at once instead of piling up.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { verifyBasicAuthPasswordAsync } from '../../model/password.js';

export const MAX_IN_FLIGHT = 1;
export const MAX_QUEUED = 64;
const OK_TTL_MS = 5 * 60_000;
const BAD_TTL_MS = 60_000;
const CACHE_MAX = 10_000;

const key = randomBytes(32);
const remembered = new Map<string, { ok: boolean; until: number }>();
let inFlight = 0;
const queue: Array<() => void> = [];

export type Verdict = 'ok' | 'bad' | 'busy';

function cacheKey(stored: string, password: string): string {
  return createHmac('sha256', key).update(stored).update('\0').update(password).digest('base64');
}

function remember(k: string, ok: boolean): void {
  if (remembered.size >= CACHE_MAX) remembered.clear();
  remembered.set(k, { ok, until: Date.now() + (ok ? OK_TTL_MS : BAD_TTL_MS) });
}

function release(): void {
  inFlight--;
  const next = queue.shift();
  if (next) next();
}

/** Verifies `password` against the stored hash with the bounds above. */
export async function verifyPassword(password: string, consumerId: string, stored: string): Promise<Verdict> {
  const k = cacheKey(stored, password);
  const hit = remembered.get(k);
  if (hit !== undefined && hit.until > Date.now()) return hit.ok ? 'ok' : 'bad';
  if (inFlight >= MAX_IN_FLIGHT) {
    if (queue.length >= MAX_QUEUED) return 'busy';
    await new Promise<void>((resolve) => queue.push(resolve));
  }
  inFlight++;
  try {
    const ok = await verifyBasicAuthPasswordAsync(password, consumerId, stored);
    remember(k, ok);
    return ok ? 'ok' : 'bad';
  } finally {
    release();
  }
}

/** For tests: what is in flight and queued now. */
export function verificationLoad(): { inFlight: number; queued: number } {
  return { inFlight, queued: queue.length };
}

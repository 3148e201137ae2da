/**
 * basic-auth password checks that wrong passwords cannot use to starve other
 * traffic (issue 14). Stored passwords are scrypt hashes (~35 ms of CPU each,
 * model/password.ts); a flood of guesses would otherwise keep libuv's pool and
 * the CPU busy. So:
 * - a verified (or refused) password is remembered for a short time, keyed
 *   by HMAC(per-process random key, stored hash + password): a client
 *   repeating its password, right or wrong, costs one HMAC. No password is
 *   ever held.
 * - scrypt runs on its own thread at nice 10 (scrypt-thread.ts), off the
 *   event loop and behind the proxy's own threads when the CPU is contended;
 * - at most MAX_IN_FLIGHT scrypt verifications run per proxy process, and
 *   they start at least MIN_SPACING_MS apart (at most 5 a second: about 18%
 *   of one core per process at ~35 ms each, whatever the attacker sends);
 *   the rest wait in a bounded queue (at most MAX_QUEUED × MIN_SPACING_MS,
 *   3.2 s); when the queue is full the request gets 503 with Retry-After at
 *   once instead of piling up. Clients that keep their password pay this once.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { verifyBasicAuthPasswordAsync } from '../../model/password.js';
import { scryptCheck, scryptParams } from './scrypt-thread.js';

export const MAX_IN_FLIGHT = 1;
export const MAX_QUEUED = 16;
export const MIN_SPACING_MS = 200;
const OK_TTL_MS = 5 * 60_000;
const BAD_TTL_MS = 60_000;
const CACHE_MAX = 10_000;

const key = randomBytes(32);
const remembered = new Map<string, { ok: boolean; until: number }>();
let inFlight = 0;
let lastStart = -Infinity;
let pumpTimer: NodeJS.Timeout | null = null;
const queue: Array<() => void> = [];

export type Verdict = 'ok' | 'bad' | 'busy';

function cacheKey(stored: string, password: string): string {
  return createHmac('sha256', key).update(stored).update('\0').update(password).digest('base64');
}

function remember(k: string, ok: boolean): void {
  if (remembered.size >= CACHE_MAX) remembered.clear();
  remembered.set(k, { ok, until: Date.now() + (ok ? OK_TTL_MS : BAD_TTL_MS) });
}

/** Starts the next queued check when a slot is free and the spacing has passed. */
function pump(): void {
  if (inFlight >= MAX_IN_FLIGHT || queue.length === 0 || pumpTimer !== null) return;
  const wait = lastStart + MIN_SPACING_MS - Date.now();
  if (wait > 0) {
    pumpTimer = setTimeout(() => {
      pumpTimer = null;
      pump();
    }, wait);
    return;
  }
  inFlight++;
  lastStart = Date.now();
  (queue.shift() as () => void)();
}

/** Waits for a verification slot; false when the queue is full. */
async function acquire(): Promise<boolean> {
  if (inFlight < MAX_IN_FLIGHT && queue.length === 0 && Date.now() - lastStart >= MIN_SPACING_MS) {
    inFlight++;
    lastStart = Date.now();
    return true;
  }
  if (queue.length >= MAX_QUEUED) return false;
  const slot = new Promise<void>((resolve) => queue.push(resolve));
  pump();
  await slot;
  return true;
}

function release(): void {
  inFlight--;
  pump();
}

/** Verifies `password` against the stored hash with the bounds above. */
export async function verifyPassword(password: string, consumerId: string, stored: string): Promise<Verdict> {
  const k = cacheKey(stored, password);
  const hit = remembered.get(k);
  if (hit !== undefined && hit.until > Date.now()) return hit.ok ? 'ok' : 'bad';
  const params = scryptParams(stored);
  // Kong's SHA-1 form costs microseconds: no queue for it.
  if (params === null) {
    const ok = await verifyBasicAuthPasswordAsync(password, consumerId, stored);
    remember(k, ok);
    return ok ? 'ok' : 'bad';
  }
  if (!(await acquire())) return 'busy';
  try {
    const ok = await scryptCheck(password, params);
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

/**
 * basic-auth password checks that wrong passwords cannot use to starve other
 * traffic (issue 14) nor to lock out the honest (issue 24). Stored passwords
 * are scrypt hashes (~35 ms of CPU each, model/password.ts). So:
 * - a verified (or refused) password is remembered for a short time, keyed
 *   by HMAC(per-process random key, stored hash + username + password): a
 *   client repeating its password, right or wrong, costs one HMAC. No
 *   password is ever held.
 * - scrypt runs on its own thread at nice 10 (scrypt-thread.ts), off the
 *   event loop and behind the proxy's own threads when the CPU is contended;
 * - the CPU bound is per process and overall: at most MAX_IN_FLIGHT scrypt
 *   checks run, starting at least MIN_SPACING_MS apart (at most 5 a second:
 *   about 18% of one core per process at ~35 ms each, whatever is sent);
 * - the checks waiting for that are scheduled fairly, not in one global
 *   queue: each waits in the queue of its username, and inside it in the
 *   queue of its source (the client IP as the proxy sees it, after
 *   trusted_ips). Usernames take turns, and inside a username the sources take
 *   turns. A source may have at most PER_SOURCE_QUEUED checks waiting (over all
 *   usernames) and a username at most PER_USERNAME_QUEUED (over all sources);
 *   past either the request gets 503 with Retry-After at once. So a flood
 *   of guesses from one address fills only that address's share, and a valid
 *   user from another address is checked within a few turns (issue 24: one
 *   global queue of 16 refused 37 of 37 honest users). A flood against one
 *   username from many addresses fills only that username's share. MAX_QUEUED
 *   bounds the whole (memory), for floods from very many addresses.
 * - an unknown username is checked against a hash no password matches, made
 *   once per process with the cost of a real one
 *   (model/password.ts unmatchableBasicAuthPasswordHash), through the same
 *   queues: unknown and known-with-a-wrong-password usernames cost the same
 *   time and get the same 401 (Kong's kong/plugins/basic-auth/access.lua
 *   answers both "Unauthorized"), so usernames cannot be found by timing.
 *   Kong's SHA-1 form (only from `_transform: true` imports) is cheap and not
 *   queued; a username stored that way answers faster than an unknown one.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { unmatchableBasicAuthPasswordHash, verifyBasicAuthPasswordAsync } from '../../model/password.js';
import { scryptCheck, scryptParams, type ScryptParams } from './scrypt-thread.js';

export const MAX_IN_FLIGHT = 1;
export const MIN_SPACING_MS = 200;
export const PER_SOURCE_QUEUED = 4;
export const PER_USERNAME_QUEUED = 8;
export const MAX_QUEUED = 256;
const OK_TTL_MS = 5 * 60_000;
const BAD_TTL_MS = 60_000;
const CACHE_MAX = 10_000;

const key = randomBytes(32);
const remembered = new Map<string, { ok: boolean; until: number }>();
let unknownUser: { stored: string; params: ScryptParams } | null = null;
let inFlight = 0;
let lastStart = -Infinity;
let pumpTimer: NodeJS.Timeout | null = null;

/** Waiting checks: username → source → starters, each Map in turn order (served first = first key). */
const lanes = new Map<string, Map<string, Array<() => void>>>();
const waitingBySource = new Map<string, number>();
const waitingByUsername = new Map<string, number>();
let queued = 0;

export type Verdict = 'ok' | 'bad' | 'busy';

/** One password check: who is asking (source: the client IP after trusted_ips) and what they sent. */
export interface Attempt {
  username: string;
  password: string;
  source: string;
}

/** The credential stored for the username, or null when there is none. */
export interface StoredPassword {
  consumerId: string;
  stored: string;
}

function cacheKey(stored: string, username: string, password: string): string {
  return createHmac('sha256', key).update(stored).update('\0').update(username).update('\0').update(password).digest('base64');
}

function remember(k: string, ok: boolean): void {
  if (remembered.size >= CACHE_MAX) remembered.clear();
  remembered.set(k, { ok, until: Date.now() + (ok ? OK_TTL_MS : BAD_TTL_MS) });
}

function unknownUserHash(): { stored: string; params: ScryptParams } {
  if (unknownUser === null) {
    const stored = unmatchableBasicAuthPasswordHash();
    unknownUser = { stored, params: scryptParams(stored) as ScryptParams };
  }
  return unknownUser;
}

function count(m: Map<string, number>, k: string, by: number): void {
  const n = (m.get(k) ?? 0) + by;
  if (n === 0) m.delete(k);
  else m.set(k, n);
}

/** The next waiting check, round-robin over usernames and, inside one, over sources. */
function takeNext(): (() => void) | undefined {
  const first = lanes.entries().next();
  if (first.done === true) return undefined;
  const [username, sources] = first.value;
  const [source, starters] = sources.entries().next().value as [string, Array<() => void>];
  const start = starters.shift();
  // served: this source goes to the back of its username's turn, the username to the back of all
  sources.delete(source);
  if (starters.length > 0) sources.set(source, starters);
  lanes.delete(username);
  if (sources.size > 0) lanes.set(username, sources);
  queued--;
  count(waitingBySource, source, -1);
  count(waitingByUsername, username, -1);
  return start;
}

/** Starts the next waiting check when a slot is free and the spacing has passed. */
function pump(): void {
  if (inFlight >= MAX_IN_FLIGHT || queued === 0 || pumpTimer !== null) return;
  const wait = lastStart + MIN_SPACING_MS - Date.now();
  if (wait > 0) {
    pumpTimer = setTimeout(() => {
      pumpTimer = null;
      pump();
    }, wait);
    return;
  }
  const start = takeNext() as () => void;
  inFlight++;
  lastStart = Date.now();
  start();
}

/** Waits for a verification slot; false when this source's, this username's or the whole share is full. */
async function acquire(source: string, username: string): Promise<boolean> {
  if (inFlight < MAX_IN_FLIGHT && queued === 0 && Date.now() - lastStart >= MIN_SPACING_MS) {
    inFlight++;
    lastStart = Date.now();
    return true;
  }
  if (
    queued >= MAX_QUEUED ||
    (waitingBySource.get(source) ?? 0) >= PER_SOURCE_QUEUED ||
    (waitingByUsername.get(username) ?? 0) >= PER_USERNAME_QUEUED
  ) {
    return false;
  }
  const slot = new Promise<void>((resolve) => {
    let sources = lanes.get(username);
    if (sources === undefined) lanes.set(username, (sources = new Map()));
    let starters = sources.get(source);
    if (starters === undefined) sources.set(source, (starters = []));
    starters.push(resolve);
  });
  queued++;
  count(waitingBySource, source, 1);
  count(waitingByUsername, username, 1);
  pump();
  await slot;
  return true;
}

function release(): void {
  inFlight--;
  pump();
}

/**
 * Verifies the attempt against the stored password (null: unknown username, checked against the
 * unmatchable hash, never 'ok') with the bounds above.
 */
export async function verifyPassword(attempt: Attempt, cred: StoredPassword | null): Promise<Verdict> {
  const stored = cred === null ? unknownUserHash().stored : cred.stored;
  const k = cacheKey(stored, attempt.username, attempt.password);
  const hit = remembered.get(k);
  if (hit !== undefined && hit.until > Date.now()) return hit.ok && cred !== null ? 'ok' : 'bad';
  const params = cred === null ? unknownUserHash().params : scryptParams(stored);
  // Kong's SHA-1 form costs microseconds: no queue for it.
  if (params === null) {
    const ok = await verifyBasicAuthPasswordAsync(attempt.password, (cred as StoredPassword).consumerId, stored);
    remember(k, ok);
    return ok ? 'ok' : 'bad';
  }
  if (!(await acquire(attempt.source, attempt.username))) return 'busy';
  try {
    const ok = (await scryptCheck(attempt.password, params)) && cred !== null;
    remember(k, ok);
    return ok ? 'ok' : 'bad';
  } finally {
    release();
  }
}

/** For tests: what is in flight and waiting now, in all and (given) for one source or username. */
export function verificationLoad(of: { source?: string; username?: string } = {}): { inFlight: number; queued: number } {
  if (of.source !== undefined) return { inFlight, queued: waitingBySource.get(of.source) ?? 0 };
  if (of.username !== undefined) return { inFlight, queued: waitingByUsername.get(of.username) ?? 0 };
  return { inFlight, queued };
}

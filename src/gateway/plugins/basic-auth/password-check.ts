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
 * - each source (the client IP as the proxy sees it, after trusted_ips)
 *   and each username has a budget of scrypt checks (BUDGET_BURST, one more
 *   every BUDGET_REFILL_MS); a check past either is answered busy (503 with
 *   Retry-After) at once, whether the username exists or not (issue 45);
 * - the checks waiting are scheduled fairly, not in one global queue: each
 *   waits in the queue of its source, and the source served next is the one
 *   with the most of its budget left, so a client that has had few checks
 *   lately goes before addresses that flood (sources with equal budgets take
 *   turns). A source may have at most PER_SOURCE_QUEUED checks waiting and a
 *   username at most PER_USERNAME_QUEUED; MAX_QUEUED bounds the whole
 *   (memory), and when it is full a newcomer takes the place of the newest
 *   check of the source that has spent the most, if that is more than the
 *   newcomer's (issue 45: random usernames from 200 addresses filled it, and
 *   valid users from elsewhere got 503, issue 24: one global queue of 16
 *   refused 37 of 37 honest users);
 * - verdicts are remembered right and wrong apart, each map bounded and
 *   dropping its oldest entry, so a flood of failures never pushes out the
 *   right passwords of valid users;
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
/**
 * The scrypt checks a source, and a username, may start: a bucket of BUDGET_BURST, refilled by one
 * every BUDGET_REFILL_MS (issue 45). Known and unknown usernames draw on the same budgets, so a
 * "busy" answer says nothing about whether a username exists.
 */
export const BUDGET_BURST = 20;
export const BUDGET_REFILL_MS = 3_000;
/** Sources and usernames whose budgets are remembered (the least recently used is forgotten past it). */
const BUDGETS_MAX = 10_000;
const OK_TTL_MS = 5 * 60_000;
const BAD_TTL_MS = 60_000;
const CACHE_MAX = 10_000;

const key = randomBytes(32);
/**
 * Verdicts remembered, right and wrong apart, each bounded and dropping its oldest entry when full
 * (issue 45: one shared map, cleared whenever full, let a flood of unknown usernames wipe the
 * right passwords of valid users every 10,000 guesses, who then queued behind the flood).
 */
const rememberedOk = new Map<string, number>();
const rememberedBad = new Map<string, number>();
let unknownUser: { stored: string; params: ScryptParams } | null = null;
let inFlight = 0;
let lastStart = -Infinity;
let pumpTimer: NodeJS.Timeout | null = null;

interface Waiting {
  start: (go: boolean) => void;
  username: string;
}

/** Waiting checks: source → its checks in arrival order; the Map in turn order (a source served goes to the back). */
const lanes = new Map<string, Waiting[]>();
const waitingBySource = new Map<string, number>();
const waitingByUsername = new Map<string, number>();
let queued = 0;

/** A token bucket (tokens, when last refilled). */
interface Budget {
  tokens: number;
  at: number;
}
const sourceBudgets = new Map<string, Budget>();
const usernameBudgets = new Map<string, Budget>();

/** The tokens left in `k`'s bucket now (refilled for the time passed); moves `k` to the back (most recently used). */
function budgetOf(m: Map<string, Budget>, k: string, now: number): Budget {
  let b = m.get(k);
  if (b === undefined) {
    if (m.size >= BUDGETS_MAX) m.delete(m.keys().next().value as string);
    b = { tokens: BUDGET_BURST, at: now };
  } else {
    m.delete(k);
    const refill = Math.floor((now - b.at) / BUDGET_REFILL_MS);
    if (refill > 0) {
      b.tokens = Math.min(BUDGET_BURST, b.tokens + refill);
      b.at = b.tokens === BUDGET_BURST ? now : b.at + refill * BUDGET_REFILL_MS;
    }
  }
  m.set(k, b);
  return b;
}

/** The tokens a source has left now, without touching its place (for scheduling). */
function tokensOf(source: string, now: number): number {
  const b = sourceBudgets.get(source);
  if (b === undefined) return BUDGET_BURST;
  return Math.min(BUDGET_BURST, b.tokens + Math.floor((now - b.at) / BUDGET_REFILL_MS));
}

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
  const m = ok ? rememberedOk : rememberedBad;
  if (m.size >= CACHE_MAX) m.delete(m.keys().next().value as string);
  m.set(k, Date.now() + (ok ? OK_TTL_MS : BAD_TTL_MS));
}

/** A remembered verdict for `k`: true (right), false (wrong), or null (none, or expired). */
function recall(k: string): boolean | null {
  const now = Date.now();
  const ok = rememberedOk.get(k);
  if (ok !== undefined && ok > now) return true;
  const bad = rememberedBad.get(k);
  if (bad !== undefined && bad > now) return false;
  return null;
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

/** Removes `w`, the first (or, `last`, the newest) waiting check of `source`, from the queues. */
function unqueue(source: string, last: boolean): Waiting | undefined {
  const list = lanes.get(source);
  if (list === undefined) return undefined;
  const w = last ? list.pop() : list.shift();
  if (w === undefined) return undefined;
  // served: this source goes to the back of the turn
  lanes.delete(source);
  if (list.length > 0) lanes.set(source, list);
  queued--;
  count(waitingBySource, source, -1);
  count(waitingByUsername, w.username, -1);
  return w;
}

/**
 * The source served next: the one with the most of its budget left (it has had the fewest checks
 * lately: an honest client among flooding addresses goes first), in turn order among equals.
 */
function nextSource(now: number): string | undefined {
  let best: string | undefined;
  let bestTokens = -1;
  for (const source of lanes.keys()) {
    const t = tokensOf(source, now);
    if (t > bestTokens) {
      best = source;
      bestTokens = t;
    }
  }
  return best;
}

/** Starts the next waiting check when a slot is free and the spacing has passed. */
function pump(): void {
  if (inFlight >= MAX_IN_FLIGHT || queued === 0 || pumpTimer !== null) return;
  const now = Date.now();
  const wait = lastStart + MIN_SPACING_MS - now;
  if (wait > 0) {
    pumpTimer = setTimeout(() => {
      pumpTimer = null;
      pump();
    }, wait);
    return;
  }
  const w = unqueue(nextSource(now) as string, false) as Waiting;
  inFlight++;
  lastStart = now;
  w.start(true);
}

/**
 * Makes room in a full queue for a check from `source`: the newest waiting check of the source that
 * has used the most of its budget is answered busy, if that source has used more than `source` has.
 */
function evictFor(source: string, now: number): boolean {
  const mine = tokensOf(source, now);
  let worst: string | undefined;
  let worstTokens = mine;
  for (const s of lanes.keys()) {
    const t = tokensOf(s, now);
    if (t < worstTokens) {
      worst = s;
      worstTokens = t;
    }
  }
  if (worst === undefined) return false;
  unqueue(worst, true)?.start(false);
  return true;
}

/**
 * Waits for a verification slot; false (busy) when this source's or username's budget is spent,
 * or its share of the queue is full, or the whole queue is full of sources that have used less.
 */
async function acquire(source: string, username: string): Promise<boolean> {
  const now = Date.now();
  if ((waitingBySource.get(source) ?? 0) >= PER_SOURCE_QUEUED || (waitingByUsername.get(username) ?? 0) >= PER_USERNAME_QUEUED) return false;
  const sourceBudget = budgetOf(sourceBudgets, source, now);
  const usernameBudget = budgetOf(usernameBudgets, username, now);
  if (sourceBudget.tokens < 1 || usernameBudget.tokens < 1) return false;
  if (inFlight < MAX_IN_FLIGHT && queued === 0 && now - lastStart >= MIN_SPACING_MS) {
    sourceBudget.tokens--;
    usernameBudget.tokens--;
    inFlight++;
    lastStart = now;
    return true;
  }
  if (queued >= MAX_QUEUED && !evictFor(source, now)) return false;
  sourceBudget.tokens--;
  usernameBudget.tokens--;
  const slot = new Promise<boolean>((resolve) => {
    let list = lanes.get(source);
    if (list === undefined) lanes.set(source, (list = []));
    list.push({ start: resolve, username });
  });
  queued++;
  count(waitingBySource, source, 1);
  count(waitingByUsername, username, 1);
  pump();
  return slot;
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
  const hit = recall(k);
  if (hit !== null) return hit && cred !== null ? 'ok' : 'bad';
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

/** For tests: forgets every source's and username's budget (each test starts with full ones). */
export function forgetBudgets(): void {
  sourceBudgets.clear();
  usernameBudgets.clear();
}

/** For tests: what is in flight and waiting now, in all and (given) for one source or username. */
export function verificationLoad(of: { source?: string; username?: string } = {}): { inFlight: number; queued: number } {
  if (of.source !== undefined) return { inFlight, queued: waitingBySource.get(of.source) ?? 0 };
  if (of.username !== undefined) return { inFlight, queued: waitingByUsername.get(of.username) ?? 0 };
  return { inFlight, queued };
}

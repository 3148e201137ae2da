/**
 * basic-auth's password checks under load (issue 14), in-process: which stored
 * forms go to the scrypt thread, that a password checked once (right or wrong)
 * is answered from memory without queueing, that each source's and each
 * username's share of the queue is bounded (busy past it, at once) and served
 * round-robin, that an unknown username costs a scrypt check like a known one
 * (counted, not timed), and that Kong's cheap SHA-1 form never waits behind it. Each test
 * leaves the queue empty. The socket-level flood is in basic-auth-flood.test.ts.
 */
import { randomBytes, scryptSync } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { kongSha1Password } from '../../../src/gateway/model/password.js';
import { scryptCheck, scryptChecksStarted, scryptParams } from '../../../src/gateway/plugins/basic-auth/scrypt-thread.js';
import { BUDGET_BURST, forgetBudgets, MAX_IN_FLIGHT, MIN_SPACING_MS, PER_SOURCE_QUEUED, PER_USERNAME_QUEUED, verificationLoad, verifyPassword } from '../../../src/gateway/plugins/basic-auth/password-check.js';

/** The stored scrypt form with a small cost so the tests run fast. */
function cheap(password: string, n = 1024): string {
  const salt = randomBytes(16);
  return `scrypt$${n}$8$1$${salt.toString('base64')}$${scryptSync(password, salt, 32, { N: n, r: 8, p: 1 }).toString('base64')}`;
}

/** One check of `password` against a stored credential, from one source, for one username unless told. */
function check(password: string, consumerId: string, stored: string, source = '127.0.0.1', username = 'alice') {
  return verifyPassword({ username, password, source }, { consumerId, stored });
}

// Each test starts with full budgets: sources and usernames are reused from test to test.
beforeEach(() => forgetBudgets());

async function drained(): Promise<void> {
  for (let i = 0; i < 400 && (verificationLoad().inFlight > 0 || verificationLoad().queued > 0); i++) await new Promise((r) => setTimeout(r, 25));
  expect(verificationLoad()).toEqual({ inFlight: 0, queued: 0 });
}

describe('scrypt parameters', () => {
  it('reads the scrypt form with sane costs, at the edges too', () => {
    expect(scryptParams('scrypt$1024$8$1$c2FsdA==$aGFzaA==')).toEqual({ n: 1024, r: 8, p: 1, salt: 'c2FsdA==', hash: 'aGFzaA==' });
    for (const [n, r, p] of [[2, 1, 1], [1 << 20, 32, 16]]) expect(scryptParams(`scrypt$${n}$${r}$${p}$c2FsdA==$aGFzaA==`)).toMatchObject({ n, r, p });
  });

  it('refuses other forms and costs out of bounds (then model/password.ts decides)', () => {
    for (const [n, r, p] of [[1, 8, 1], [1000, 8, 1], [1 << 21, 8, 1], [1024, 0, 1], [1024, 33, 1], [1024, 8, 0], [1024, 8, 17]]) {
      expect(scryptParams(`scrypt$${n}$${r}$${p}$c2FsdA==$aGFzaA==`), `${n} ${r} ${p}`).toBeNull();
    }
    expect(scryptParams(kongSha1Password('pw', 'c1'))).toBeNull();
    expect(scryptParams('scrypt$1024$8$1$c2FsdA==')).toBeNull();
    expect(scryptParams('xscrypt$1024$8$1$c2FsdA==$aGFzaA==')).toBeNull();
  });
});

describe('the scrypt thread', () => {
  it('answers true for the right password and false for a wrong one or an unusable hash', async () => {
    const params = scryptParams(cheap('right'))!;
    expect(await scryptCheck('right', params)).toBe(true);
    expect(await scryptCheck('wrong', params)).toBe(false);
    expect(await scryptCheck('right', { ...params, hash: Buffer.from('short').toString('base64') })).toBe(false);
    // costs beyond the thread's memory bound fail closed instead of running
    expect(await scryptCheck('right', { ...params, n: 1 << 20, r: 32 })).toBe(false);
  });
});

describe('the scrypt thread and the process', () => {
  // Node counts a referenced worker's port among the resources that keep the event loop alive.
  const holding = () => process.getActiveResourcesInfo().filter((r) => r === 'MessagePort').length;

  it('keeps the process alive while a check is in progress, and never when idle (the gateway can exit)', async () => {
    const params = scryptParams(cheap('right'))!;
    const idle = holding(); // the test runner may hold ports of its own
    for (const guess of ['right', 'wrong', 'again']) {
      const answer = scryptCheck(guess, params);
      expect(holding(), `while checking "${guess}"`).toBe(idle + 1);
      expect(await answer).toBe(guess === 'right');
      await new Promise((r) => setImmediate(r));
      expect(holding(), `after "${guess}" was answered`).toBe(idle);
    }
    // two at once: held until the last answer
    const both = [scryptCheck('right', params), scryptCheck('wrong', params)];
    expect(holding()).toBe(idle + 1);
    await Promise.all(both);
    await new Promise((r) => setImmediate(r));
    expect(holding()).toBe(idle);
  });
});

describe('verifyPassword', () => {
  it("answers ok and bad, for the scrypt form and for Kong's SHA-1 form", async () => {
    const stored = cheap('right');
    expect(await check('right', 'c1', stored)).toBe('ok');
    expect(await check('wrong', 'c1', stored)).toBe('bad');
    expect(await check('right', 'c1', kongSha1Password('right', 'c1'))).toBe('ok');
    expect(await check('wrong', 'c1', kongSha1Password('right', 'c1'))).toBe('bad');
    await drained();
  });

  it('answers a password it has checked, right or wrong, from memory: repeats never queue', async () => {
    const stored = cheap('right');
    expect(await check('right', 'c1', stored)).toBe('ok');
    expect(await check('nope', 'c1', stored)).toBe('bad');
    await drained();
    const repeats = [...Array.from({ length: 40 }, () => check('right', 'c1', stored)), ...Array.from({ length: 40 }, () => check('nope', 'c1', stored))];
    expect(verificationLoad()).toEqual({ inFlight: 0, queued: 0 });
    const verdicts = await Promise.all(repeats);
    expect(verdicts.filter((v) => v === 'ok')).toHaveLength(40);
    expect(verdicts.filter((v) => v === 'bad')).toHaveLength(40);
    // remembered per stored hash: the same password against another hash is checked afresh
    expect(await check('right', 'c1', cheap('other'))).toBe('bad');
    await drained();
  });

  it(`runs ${MAX_IN_FLIGHT} check at a time, lets one source wait with ${PER_SOURCE_QUEUED}, answers it busy past that at once; other sources still wait; SHA-1 never waits`, { timeout: 30_000 }, async () => {
    const stored = cheap('right');
    await new Promise((r) => setTimeout(r, 250)); // past the spacing of the previous test's last check
    const guesses = Array.from({ length: MAX_IN_FLIGHT + PER_SOURCE_QUEUED + 3 }, (_, i) => check(`guess-${i}-${Math.random()}`, 'c1', stored, '127.0.0.2'));
    expect(verificationLoad()).toEqual({ inFlight: MAX_IN_FLIGHT, queued: PER_SOURCE_QUEUED });
    const other = check('right', 'c1', stored, '127.0.0.1');
    expect(verificationLoad({ source: '127.0.0.1' }), 'another source is not refused').toEqual({ inFlight: MAX_IN_FLIGHT, queued: 1 });
    expect(await check('right', 'c1', kongSha1Password('right', 'c1'))).toBe('ok');
    const verdicts = await Promise.all(guesses);
    expect(verdicts.slice(-3)).toEqual(['busy', 'busy', 'busy']);
    expect(verdicts.filter((v) => v === 'bad')).toHaveLength(MAX_IN_FLIGHT + PER_SOURCE_QUEUED);
    expect(await other).toBe('ok');
    await drained();
  });

  it(`lets one username wait with ${PER_USERNAME_QUEUED} over all sources, busy past that; other usernames still wait`, { timeout: 30_000 }, async () => {
    const stored = cheap('right');
    await new Promise((r) => setTimeout(r, 250));
    // one guess per source, so no source's own share is what refuses them
    const guesses = Array.from({ length: MAX_IN_FLIGHT + PER_USERNAME_QUEUED + 2 }, (_, i) => check(`guess-${i}-${Math.random()}`, 'c1', stored, `10.0.0.${i + 1}`));
    expect(verificationLoad({ username: 'alice' })).toEqual({ inFlight: MAX_IN_FLIGHT, queued: PER_USERNAME_QUEUED });
    const bob = check('bobs-pass', 'c2', cheap('bobs-pass'), '10.0.0.1', 'bob');
    expect(verificationLoad({ username: 'bob' }), 'another username is not refused').toEqual({ inFlight: MAX_IN_FLIGHT, queued: 1 });
    const verdicts = await Promise.all(guesses);
    expect(verdicts.slice(-2)).toEqual(['busy', 'busy']);
    expect(await bob).toBe('ok');
    await drained();
  });

  it('serves first the waiting source with the most of its budget left, in turn among equals: a flooding source waits behind the others', { timeout: 30_000 }, async () => {
    const stored = cheap('right');
    await new Promise((r) => setTimeout(r, 250));
    const order: string[] = [];
    const run = (label: string, source: string, username: string) =>
      check(`${label}-${Math.random()}`, 'c1', stored, source, username).then((v) => {
        order.push(label);
        return v;
      });
    // a flood from one source against alice: the first runs, the rest wait in that source's share
    const flood = Array.from({ length: 1 + PER_SOURCE_QUEUED }, (_, i) => run(`flood-${i}`, '127.0.0.2', 'alice'));
    // then one check for another username, and one for alice from another source
    const bob = run('bob', '127.0.0.1', 'bob');
    const alice = run('alice-elsewhere', '127.0.0.3', 'alice');
    await Promise.all([...flood, bob, alice]);
    // one global queue would serve them last (after all five flood checks); the flooding source has spent 5 of its budget, the others 1
    expect(order.slice(0, 4)).toEqual(['flood-0', 'bob', 'alice-elsewhere', 'flood-1']);
    await drained();
  });

  it(`gives a source ${BUDGET_BURST} checks, then answers busy, for an unknown username as for a known one (issue 45)`, { timeout: 30_000 }, async () => {
    const stored = cheap('right');
    await new Promise((r) => setTimeout(r, 250));
    const source = '127.0.0.77';
    const verdicts: string[] = [];
    // new usernames each time, so no username's own budget is what refuses them; the budget refills one every few seconds meanwhile
    for (let i = 0; i < 2 * BUDGET_BURST && !verdicts.includes('busy'); i++) verdicts.push(await check(`spent-${i}-${Math.random()}`, 'c1', stored, source, `user-${i}`));
    expect(verdicts.indexOf('busy')).toBeGreaterThanOrEqual(BUDGET_BURST);
    // the clock held, so no refill comes between: the right password of a known username and an unknown username alike
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    expect(await check('right', 'c1', stored, source, 'alice'), 'known username, right password').toBe('busy');
    expect(await verifyPassword({ username: 'nobody', password: 'x', source }, null), 'unknown username').toBe('busy');
    vi.useRealTimers();
    // another source still has its own
    expect(await check('right', 'c1', stored, '127.0.0.78', 'alice')).toBe('ok');
    await drained();
  });

  it('checks an unknown username with scrypt too, through the same queues, and never answers ok', { timeout: 30_000 }, async () => {
    const stored = cheap('right');
    await drained();
    const before = scryptChecksStarted();
    expect(await verifyPassword({ username: 'nobody', password: 'right', source: '127.0.0.1' }, null)).toBe('bad');
    expect(scryptChecksStarted() - before, 'unknown username').toBe(1);
    expect(await check('wrong-for-alice', 'c1', stored)).toBe('bad');
    expect(scryptChecksStarted() - before, 'known username, wrong password').toBe(2);
    // repeats are answered from memory for both
    expect(await verifyPassword({ username: 'nobody', password: 'right', source: '127.0.0.1' }, null)).toBe('bad');
    expect(await check('wrong-for-alice', 'c1', stored)).toBe('bad');
    expect(scryptChecksStarted() - before).toBe(2);
    // and an unknown username waits in the same source share as a known one
    await new Promise((r) => setTimeout(r, 250));
    const guesses = Array.from({ length: MAX_IN_FLIGHT + PER_SOURCE_QUEUED }, (_, i) => check(`g-${i}-${Math.random()}`, 'c1', stored, '127.0.0.9'));
    expect(await verifyPassword({ username: `nobody-${Math.random()}`, password: 'x', source: '127.0.0.9' }, null)).toBe('busy');
    await Promise.all(guesses);
    await drained();
  });
});

/**
 * The two bounds one at a time, with the clock held (only Date is faked: the scrypt thread and
 * the queue's timer are real), so neither can hide the other: a check that has ended still
 * spaces the next one by MIN_SPACING_MS, and a check in flight holds the next one even once the
 * spacing has passed.
 */
describe('verifyPassword: the spacing and the in-flight bound, each alone', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it(`starts no check within ${MIN_SPACING_MS} ms of the last, even with none in flight; then starts it`, { timeout: 30_000 }, async () => {
    await new Promise((r) => setTimeout(r, MIN_SPACING_MS + 50)); // past any earlier test's last start
    const stored = cheap('right');
    const t0 = Date.now();
    vi.useFakeTimers({ toFake: ['Date'], now: t0 });
    expect(await check('first-guess', 'c1', stored)).toBe('bad');
    expect(verificationLoad()).toEqual({ inFlight: 0, queued: 0 });
    const second = check('second-guess', 'c1', stored);
    expect(verificationLoad(), 'held by the spacing alone').toEqual({ inFlight: 0, queued: 1 });
    await new Promise((r) => setTimeout(r, 50));
    expect(verificationLoad(), 'still held: the clock has not moved').toEqual({ inFlight: 0, queued: 1 });
    vi.setSystemTime(t0 + MIN_SPACING_MS);
    expect(await second).toBe('bad');
    await drained();
  });

  it('holds a check while another is in flight, even once the spacing has passed', { timeout: 30_000 }, async () => {
    await new Promise((r) => setTimeout(r, 2 * MIN_SPACING_MS + 100)); // the previous test's clock ran MIN_SPACING_MS ahead
    const stored = cheap('right');
    const t0 = Date.now();
    vi.useFakeTimers({ toFake: ['Date'], now: t0 });
    const first = check('guess-a', 'c1', stored);
    expect(verificationLoad()).toEqual({ inFlight: 1, queued: 0 });
    vi.setSystemTime(t0 + 10 * MIN_SPACING_MS);
    const second = check('guess-b', 'c1', stored);
    expect(verificationLoad(), 'held by the check in flight alone').toEqual({ inFlight: 1, queued: 1 });
    expect(await first).toBe('bad');
    expect(await second).toBe('bad');
    await drained();
  });

  it('forgets a refused password after a minute: then it is checked afresh', { timeout: 30_000 }, async () => {
    const stored = cheap('right');
    // Last in the file: the clock only moves forward, and the module's last start stays a minute
    // ahead of real time afterwards. It starts 10 s ahead, past the earlier tests' moved clocks.
    const now = Date.now() + 10_000;
    vi.useFakeTimers({ toFake: ['Date'], now });
    expect(await check('wrong-ttl', 'c1', stored)).toBe('bad');
    vi.setSystemTime(now + 59_000);
    const remembered = check('wrong-ttl', 'c1', stored);
    expect(verificationLoad(), 'answered from memory').toEqual({ inFlight: 0, queued: 0 });
    expect(await remembered).toBe('bad');
    vi.setSystemTime(now + 61_000);
    const again = check('wrong-ttl', 'c1', stored);
    expect(verificationLoad(), 'checked again').toEqual({ inFlight: 1, queued: 0 });
    expect(await again).toBe('bad');
    await drained();
  });
});

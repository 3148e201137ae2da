/**
 * basic-auth's password checks under load (issue 14), in-process: which stored
 * forms go to the scrypt thread, that a password checked once (right or wrong)
 * is answered from memory without queueing, that the queue is bounded (busy past
 * it, at once) and that Kong's cheap SHA-1 form never waits behind it. Each test
 * leaves the queue empty. The socket-level flood is in basic-auth-flood.test.ts.
 */
import { randomBytes, scryptSync } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { kongSha1Password } from '../../../src/gateway/model/password.js';
import { scryptCheck, scryptParams } from '../../../src/gateway/plugins/basic-auth/scrypt-thread.js';
import { MAX_IN_FLIGHT, MAX_QUEUED, MIN_SPACING_MS, verificationLoad, verifyPassword } from '../../../src/gateway/plugins/basic-auth/verify.js';

/** The stored scrypt form with a small cost so the tests run fast. */
function cheap(password: string, n = 1024): string {
  const salt = randomBytes(16);
  return `scrypt$${n}$8$1$${salt.toString('base64')}$${scryptSync(password, salt, 32, { N: n, r: 8, p: 1 }).toString('base64')}`;
}

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
    expect(await verifyPassword('right', 'c1', stored)).toBe('ok');
    expect(await verifyPassword('wrong', 'c1', stored)).toBe('bad');
    expect(await verifyPassword('right', 'c1', kongSha1Password('right', 'c1'))).toBe('ok');
    expect(await verifyPassword('wrong', 'c1', kongSha1Password('right', 'c1'))).toBe('bad');
    await drained();
  });

  it('answers a password it has checked, right or wrong, from memory: repeats never queue', async () => {
    const stored = cheap('right');
    expect(await verifyPassword('right', 'c1', stored)).toBe('ok');
    expect(await verifyPassword('nope', 'c1', stored)).toBe('bad');
    await drained();
    const repeats = [...Array.from({ length: 40 }, () => verifyPassword('right', 'c1', stored)), ...Array.from({ length: 40 }, () => verifyPassword('nope', 'c1', stored))];
    expect(verificationLoad()).toEqual({ inFlight: 0, queued: 0 });
    const verdicts = await Promise.all(repeats);
    expect(verdicts.filter((v) => v === 'ok')).toHaveLength(40);
    expect(verdicts.filter((v) => v === 'bad')).toHaveLength(40);
    // remembered per stored hash: the same password against another hash is checked afresh
    expect(await verifyPassword('right', 'c1', cheap('other'))).toBe('bad');
    await drained();
  });

  it(`runs ${MAX_IN_FLIGHT} check at a time, queues ${MAX_QUEUED}, answers busy past that at once; SHA-1 never waits`, { timeout: 30_000 }, async () => {
    const stored = cheap('right');
    await new Promise((r) => setTimeout(r, 250)); // past the spacing of the previous test's last check
    const guesses = Array.from({ length: MAX_IN_FLIGHT + MAX_QUEUED + 3 }, (_, i) => verifyPassword(`guess-${i}-${Math.random()}`, 'c1', stored));
    expect(verificationLoad()).toEqual({ inFlight: MAX_IN_FLIGHT, queued: MAX_QUEUED });
    expect(await verifyPassword('right', 'c1', kongSha1Password('right', 'c1'))).toBe('ok');
    const verdicts = await Promise.all(guesses);
    expect(verdicts.slice(-3)).toEqual(['busy', 'busy', 'busy']);
    expect(verdicts.filter((v) => v === 'bad')).toHaveLength(MAX_IN_FLIGHT + MAX_QUEUED);
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
    expect(await verifyPassword('first-guess', 'c1', stored)).toBe('bad');
    expect(verificationLoad()).toEqual({ inFlight: 0, queued: 0 });
    const second = verifyPassword('second-guess', 'c1', stored);
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
    const first = verifyPassword('guess-a', 'c1', stored);
    expect(verificationLoad()).toEqual({ inFlight: 1, queued: 0 });
    vi.setSystemTime(t0 + 10 * MIN_SPACING_MS);
    const second = verifyPassword('guess-b', 'c1', stored);
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
    expect(await verifyPassword('wrong-ttl', 'c1', stored)).toBe('bad');
    vi.setSystemTime(now + 59_000);
    const remembered = verifyPassword('wrong-ttl', 'c1', stored);
    expect(verificationLoad(), 'answered from memory').toEqual({ inFlight: 0, queued: 0 });
    expect(await remembered).toBe('bad');
    vi.setSystemTime(now + 61_000);
    const again = verifyPassword('wrong-ttl', 'c1', stored);
    expect(verificationLoad(), 'checked again').toEqual({ inFlight: 1, queued: 0 });
    expect(await again).toBe('bad');
    await drained();
  });
});

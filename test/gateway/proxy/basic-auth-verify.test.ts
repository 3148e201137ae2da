/**
 * basic-auth's password checks under load (issue 14), in-process: which stored
 * forms go to the scrypt thread, that a password checked once (right or wrong)
 * is answered from memory without queueing, that the queue is bounded (busy past
 * it, at once) and that Kong's cheap SHA-1 form never waits behind it. Each test
 * leaves the queue empty. The socket-level flood is in basic-auth-flood.test.ts.
 */
import { randomBytes, scryptSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { kongSha1Password } from '../../../src/gateway/model/password.js';
import { scryptCheck, scryptParams } from '../../../src/gateway/plugins/basic-auth/scrypt-thread.js';
import { MAX_IN_FLIGHT, MAX_QUEUED, verificationLoad, verifyPassword } from '../../../src/gateway/plugins/basic-auth/verify.js';

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

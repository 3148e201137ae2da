/**
 * Issue 45: a transaction that times out stores nothing. The gateway answered 504 for a transaction the
 * FHIR server went on with and committed minutes later. Now a transaction's checks and writes must end
 * within transactionTimeoutMs (50 s by default, below Kong's 60 s read time-out): past it, rolled back and
 * answered 503 ERR_FHIR_TRANSACTION_TIMEOUT, on the main thread and on the Bundle thread alike. Here the
 * limit is 1 ms, which no transaction of a thousand entries meets.
 */
import { describe, expect, it } from 'vitest';
import { bundlesSentToThread, THREAD_BODY_BYTES } from '../../../src/fhir/server/bundle-thread.js';
import { call, useFhirServer } from './helpers.js';

const f = useFhirServer({ limits: { transactionTimeoutMs: 1 } });

function transaction(system: string, n: number, pad: number): string {
  const entry = Array.from({ length: n }, (_, i) => ({
    fullUrl: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    resource: { resourceType: 'Patient', identifier: [{ system, value: `v${i}` }], name: [{ family: 'x'.repeat(pad) }] },
    request: { method: 'POST', url: 'Patient' },
  }));
  return JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry });
}

async function stored(system: string): Promise<number> {
  return (await call(f.base, 'GET', `Patient?identifier=${encodeURIComponent(system)}|&_summary=count`)).body.total as number;
}

describe('a transaction past its time limit', () => {
  it('on the main thread: 503 ERR_FHIR_TRANSACTION_TIMEOUT, nothing stored', async () => {
    const body = transaction('urn:t:timeout-main', 1_000, 1);
    expect(body.length).toBeLessThan(THREAD_BODY_BYTES);
    const r = await call(f.base, 'POST', '', body);
    expect([r.status, r.body.issue[0].details.text]).toEqual([503, 'ERR_FHIR_TRANSACTION_TIMEOUT']);
    expect(r.body.issue[0].diagnostics).toContain('nothing was applied');
    expect(await stored('urn:t:timeout-main')).toBe(0);
  });

  it('on the Bundle thread: the same, nothing stored', async () => {
    const body = transaction('urn:t:timeout-thread', 2_000, 100);
    expect(body.length).toBeGreaterThan(THREAD_BODY_BYTES);
    const sent = bundlesSentToThread();
    const r = await call(f.base, 'POST', '', body);
    expect(bundlesSentToThread()).toBe(sent + 1);
    expect([r.status, r.body.issue[0].details.text]).toEqual([503, 'ERR_FHIR_TRANSACTION_TIMEOUT']);
    expect(await stored('urn:t:timeout-thread')).toBe(0);
  });

  it('a single write and a batch are not transactions: they are not bounded so', async () => {
    expect((await call(f.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: 'urn:t:timeout-one', value: '1' }] })).status).toBe(201);
    expect(await stored('urn:t:timeout-one')).toBe(1);
  });
});

/**
 * The Bundle thread (issue 24): a large Bundle runs on a worker thread. When that thread dies mid-Bundle
 * (here: past its heap limit) the caller gets 500 ERR_FHIR_BUNDLE_THREAD, nothing of the Bundle is
 * committed, and the server goes on answering and writing. Real HTTP against the real server on 127.0.0.1.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { bundlesSentToThread, THREAD_BODY_BYTES } from '../../../src/fhir/server/bundle-thread.js';
import type { RunningFhirServer } from '../../../src/fhir/server/start.js';
import { removeTempDirs } from '../../helpers/tmp.js';
import { call, ids, startServer } from './helpers.js';

const S = 'urn:test:bundle-thread';

function transaction(tag: string, n: number): Record<string, unknown> {
  const entry = Array.from({ length: n }, (_, i) => ({
    resource: { resourceType: 'Basic', identifier: [{ system: S, value: `${tag}-${i}` }], code: { text: `bulk entry ${i} ${'x'.repeat(40)}` } },
    request: { method: 'POST', url: 'Basic' },
  }));
  return { resourceType: 'Bundle', type: 'transaction', entry };
}

const found = async (base: string, value: string): Promise<number> => ids((await call(base, 'GET', `Basic?identifier=${encodeURIComponent(`${S}|${value}`)}`)).body).length;

let server: RunningFhirServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  removeTempDirs();
});

describe('the Bundle thread', () => {
  it('dies past its heap mid-Bundle: 500 ERR_FHIR_BUNDLE_THREAD, nothing committed, the server goes on', async () => {
    server = await startServer({ policy: { validate: false }, limits: { bundleThreadHeapMb: 48 } });
    const base = server.url;
    const sent = bundlesSentToThread();
    const big = transaction('big', 60_000);
    const res = await call(base, 'POST', '', big);
    expect(bundlesSentToThread()).toBe(sent + 1);
    expect(res.status).toBe(500);
    expect(res.body.issue[0].details.text).toBe('ERR_FHIR_BUNDLE_THREAD');
    expect(await found(base, 'big-0')).toBe(0);
    expect(await found(base, 'big-59999')).toBe(0);
    // still answering, still writing (no write lock left behind), small Bundles on the main thread
    expect((await call(base, 'GET', 'metadata')).status).toBe(200);
    expect((await call(base, 'POST', 'Patient', { resourceType: 'Patient', name: [{ family: 'After' }] })).status).toBe(201);
    const small = transaction('small', 20);
    expect(JSON.stringify(small).length).toBeLessThan(THREAD_BODY_BYTES);
    expect((await call(base, 'POST', '', small)).status).toBe(200);
    expect(await found(base, 'small-19')).toBe(1);
  }, 120_000);
});

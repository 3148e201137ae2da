/**
 * Issue 28: a transaction's entries are validated on the validation thread, beside the writes. The answer
 * must be the one validating on the main thread gives: the same status and OperationOutcome, the lowest
 * refused entry named (an invalid resource or an entry refused for another reason, whichever comes first),
 * nothing written. Real HTTP against the real server on 127.0.0.1; the main-thread answer comes from the
 * same Bundle run through processBundle on a store of its own, with no validation thread.
 */
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { processBundle } from '../../../src/fhir/server/transaction.js';
import { entriesValidatedOnThread } from '../../../src/fhir/server/validation-thread.js';
import { openFhirStore } from '../../../src/fhir/store/sqlite-store.js';
import { tempDir } from '../../helpers/tmp.js';
import { call, ids, useFhirServer } from './helpers.js';

const S = 'urn:test:validation-thread';
const fhir = useFhirServer();
const inline = openFhirStore(tempDir('fhir-inline-'));
afterAll(() => inline.close());

function transaction(tag: string, n: number, change: Record<number, (entry: any) => void> = {}): any {
  const entry = Array.from({ length: n }, (_, i) => ({
    fullUrl: `urn:uuid:00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    resource: { resourceType: 'Basic', identifier: [{ system: S, value: `${tag}-${i}` }], code: { text: `entry ${i}` } },
    request: { method: 'POST', url: 'Basic' },
  }));
  for (const [i, f] of Object.entries(change)) f(entry[Number(i)]);
  return { resourceType: 'Bundle', type: 'transaction', entry };
}

/** The answer of the main thread alone (no validation thread), on a store of its own. */
async function mainThreadAnswer(bundle: unknown): Promise<{ status: number; body: any }> {
  const res = await processBundle({ store: inline, base: fhir.base, policy: { validate: true, referentialIntegrity: true } }, structuredClone(bundle));
  return { status: res.status, body: res.body ?? JSON.parse(res.raw!.toString('utf8')) };
}

const stored = async (value: string): Promise<number> =>
  ids((await call(fhir.base, 'GET', `Basic?identifier=${encodeURIComponent(`${S}|${value}`)}`)).body).length;

/** Posts over HTTP; checks the validation thread took the entries and the answer is the main thread's. */
async function sameAnswer(bundle: any): Promise<any> {
  const before = entriesValidatedOnThread();
  const res = await call(fhir.base, 'POST', '', bundle);
  expect(entriesValidatedOnThread()).toBeGreaterThan(before);
  const main = await mainThreadAnswer(bundle);
  expect(res.status).toBe(main.status);
  if (res.status === 200) expect(res.body.entry.map((e: any) => e.response.status)).toEqual(main.body.entry.map((e: any) => e.response.status));
  else expect(res.body).toEqual(main.body);
  return res;
}

// the server starts no validation thread on a single core (nothing to run it beside the writes)
describe.skipIf(availableParallelism() < 2)('the validation thread', () => {
  it('validates a valid transaction there and it is written', async () => {
    const res = await sameAnswer(transaction('ok', 30));
    expect(res.status).toBe(200);
    expect(await stored('ok-29')).toBe(1);
  }, 60_000);

  it('refuses the first invalid entry with the main thread OperationOutcome, nothing written', async () => {
    const res = await sameAnswer(
      transaction('bad', 30, {
        17: (e) => (e.resource.code = 5), // a CodeableConcept holding a number
        25: (e) => (e.resource.subject = { reference: '../../etc/passwd' }),
      }),
    );
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toBe('ERR_FHIR_RESOURCE_INVALID');
    expect(res.body.issue[0].expression).toEqual(['Bundle.entry[17]']);
    expect(res.body.issue[0].diagnostics).toContain('Basic.code');
    expect(await stored('bad-0')).toBe(0);
  }, 60_000);

  it('names an entry refused for another reason when it comes before the first invalid one', async () => {
    const unsupported = await sameAnswer(
      transaction('order-a', 30, {
        12: (e) => (e.request = { method: 'POST', url: 'Basic/$lookup' }),
        20: (e) => (e.resource.code = 5),
      }),
    );
    expect(unsupported.status).toBe(400);
    expect(unsupported.body.issue[0].expression).toEqual(['Bundle.entry[12]']);
    const invalidFirst = await sameAnswer(
      transaction('order-b', 30, {
        11: (e) => (e.resource.code = 5),
        12: (e) => (e.request = { method: 'POST', url: 'Basic/$lookup' }),
      }),
    );
    expect(invalidFirst.status).toBe(400);
    expect(invalidFirst.body.issue[0].details.text).toBe('ERR_FHIR_RESOURCE_INVALID');
    expect(invalidFirst.body.issue[0].expression).toEqual(['Bundle.entry[11]']);
    expect(await stored('order-a-0')).toBe(0);
    expect(await stored('order-b-0')).toBe(0);
  }, 60_000);
});

describe('the threads under --input-type=module', () => {
  // A program that starts the server from `node --input-type=module -e` (the bench does) passes that flag on to
  // its worker threads: their code must run there too, or every Bundle is validated on the main thread.
  it.skipIf(availableParallelism() < 2)('validate a transaction on the validation thread and run a large Bundle on the Bundle thread', () => {
    const dist = new URL('../../../dist/fhir/server/', import.meta.url).href;
    const script = `
const { startFhirServer } = await import(${JSON.stringify(`${dist}start.js`)});
const { entriesValidatedOnThread } = await import(${JSON.stringify(`${dist}validation-thread.js`)});
const { bundlesSentToThread } = await import(${JSON.stringify(`${dist}bundle-thread.js`)});
const s = await startFhirServer({ host: '127.0.0.1', port: 0, dataDir: process.argv[1] });
const post = async (n, pad) => {
  const entry = Array.from({ length: n }, (_, i) => ({ resource: { resourceType: 'Basic', code: { text: 'entry ' + i + pad } }, request: { method: 'POST', url: 'Basic' } }));
  const res = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/fhir+json' }, body: JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }) });
  await res.arrayBuffer();
  return res.status;
};
const small = await post(30, '');
const large = await post(3000, ' '.repeat(100));
process.stdout.write(JSON.stringify({ small, large, validated: entriesValidatedOnThread(), sent: bundlesSentToThread() }));
await s.close();`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, tempDir('fhir-esm-flag-')], { encoding: 'utf8', timeout: 60_000 });
    expect(JSON.parse(out)).toEqual({ small: 200, large: 200, validated: 30, sent: 1 });
  }, 90_000);
});

/**
 * Issue 24: one large Bundle does not stall the FHIR server. While a 20,000-entry transaction (or batch)
 * is being validated and written, a GET /fhir/metadata and a Patient read sent after it are answered
 * before it (the order in which the answers arrive, no timing); the transaction stays atomic (19,999 valid + 1 invalid:
 * 400 naming the entry, nothing committed). While its writes run, reads see none of its rows and a write
 * waits for it. Real HTTP against the real server on 127.0.0.1.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { bundlesSentToThread, onBundleThreadWriting } from '../../../src/fhir/server/bundle-thread.js';
import { BUNDLE_THREAD_NICE } from '../../../src/fhir/server/bundle-thread-work.js';
import { call, ids, useFhirServer } from './helpers.js';

const fhir = useFhirServer();
const S = 'urn:test:large-bundle';
const N = 20_000;

/** How many of this process's threads run at `nice` (/proc/self/task/<tid>/stat, field 19: proc(5)). */
function threadsAtNice(nice: number): number {
  return readdirSync('/proc/self/task').filter((tid) => {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]) === nice;
  }).length;
}

const count = async (query: string): Promise<number> => {
  const r = await call(fhir.base, 'GET', `Basic?identifier=${encodeURIComponent(query)}`);
  expect(r.status).toBe(200);
  return ids(r.body).length;
};

function bundle(type: 'transaction' | 'batch', tag: string, invalidAt = -1): string {
  const entry = Array.from({ length: N }, (_, i) => ({
    resource: { resourceType: 'Basic', identifier: [{ system: S, value: `${tag}-${i}` }], code: i === invalidAt ? 5 : { text: 'bulk' } },
    request: { method: 'POST', url: 'Basic' },
  }));
  return JSON.stringify({ resourceType: 'Bundle', type, entry });
}

/**
 * POSTs `body` to the base; once the server has received all of it (its request's 'end', just before the
 * server parses and processes it), sends GET /metadata and GET Patient/{id} on their own connections.
 * Returns the order in which the three answers completed and the Bundle's answer.
 */
async function bundleWithReads(
  body: string,
  patientId: string,
  more: { when?: Promise<void>; extra?: (order: string[]) => Promise<void> } = {},
): Promise<{ order: string[]; status: number; reply: any }> {
  const url = new URL(fhir.base);
  const order: string[] = [];
  let reads: Promise<unknown> | undefined;
  const server = fhir.server.app.server;
  // each answer counts when its status line and headers arrive (a large body then takes many turns to transfer)
  const get = async (name: string, path: string): Promise<void> => {
    const res = await request(`${fhir.base}/${path}`, { headers: { accept: 'application/fhir+json' } });
    order.push(name);
    expect(res.statusCode).toBe(200);
    await res.body.dump();
  };
  const startReads = (): void => {
    reads = Promise.all([get('metadata', 'metadata'), get('read', `Patient/${patientId}`), more.extra?.(order)]);
  };
  if (more.when) void more.when.then(startReads);
  const onRequest = (req: IncomingMessage): void => {
    if (req.method !== 'POST' || req.url !== '/fhir' || more.when) return;
    server.off('request', onRequest);
    req.on('end', startReads);
  };
  server.on('request', onRequest);
  const posted = new Promise<{ status: number; reply: any }>((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: 'POST', path: '/fhir', headers: { 'content-type': 'application/fhir+json', accept: 'application/fhir+json' } },
      (res) => {
        order.push('bundle');
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => void (text += c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, reply: JSON.parse(text) });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  const answer = await posted;
  await reads;
  return { order, ...answer };
}

describe('a large Bundle does not stall other callers', () => {
  let patientId = '';
  it('a 20,000-entry transaction: metadata and a read sent after it are answered first, and it commits', async () => {
    patientId = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', name: [{ family: 'Waiting' }] })).body.id;
    const sent = bundlesSentToThread();
    expect(threadsAtNice(BUNDLE_THREAD_NICE)).toBe(0);
    const { order, status, reply } = await bundleWithReads(bundle('transaction', 'tx'), patientId);
    expect(bundlesSentToThread()).toBe(sent + 1); // run on the Bundle thread, not the one answering the reads
    expect(threadsAtNice(BUNDLE_THREAD_NICE)).toBe(1); // which yields the CPU to them on a busy machine
    expect(status).toBe(200);
    expect(reply.entry).toHaveLength(N);
    expect(order.indexOf('bundle')).toBe(2);
    expect(await count(`${S}|tx-0`)).toBe(1);
    expect(await count(`${S}|tx-${N - 1}`)).toBe(1);
  }, 120_000);

  it('19,999 valid + 1 invalid: the reads are answered first; 400 names the entry and nothing is committed', async () => {
    const { order, status, reply } = await bundleWithReads(bundle('transaction', 'bad', N - 1), patientId);
    expect(status).toBe(400);
    expect(reply.issue[0].expression).toEqual([`Bundle.entry[${N - 1}]`]);
    expect(order.indexOf('bundle')).toBe(2);
    expect(await count(`${S}|bad-0`)).toBe(0);
    expect(await count(`${S}|bad-${N - 2}`)).toBe(0);
  }, 120_000);

  it('a 20,000-entry batch: the reads are answered first, every entry answered in order', async () => {
    const { order, status, reply } = await bundleWithReads(bundle('batch', 'batch', 7), patientId);
    expect(status).toBe(200);
    expect(reply.entry).toHaveLength(N);
    expect(reply.entry[7].response.status).toBe('400');
    expect(reply.entry[N - 1].response.status).toBe('201 Created');
    expect(order.indexOf('bundle')).toBe(2);
    expect(await count(`${S}|batch-${N - 1}`)).toBe(1);
    expect(await count(`${S}|batch-7`)).toBe(0);
  }, 120_000);

  it('while its writes run: reads are answered first and see none of its rows; a write waits for its commit', async () => {
    // the Bundle thread's write transaction beginning starts the other callers (after validation, in the write phase)
    const writing = new Promise<void>((resolve) => {
      const off = onBundleThreadWriting(() => {
        off();
        resolve();
      });
    });
    let seen = -1;
    let queued = '';
    const extra = async (order: string[]): Promise<void> => {
      const search = call(fhir.base, 'GET', `Basic?identifier=${encodeURIComponent(`${S}|w-0`)}`).then((r) => {
        order.push('search');
        seen = ids(r.body).length;
      });
      const write = call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', name: [{ family: 'Queued' }] }).then((r) => {
        expect(r.status).toBe(201);
        queued = r.body.meta.lastUpdated;
      });
      await Promise.all([search, write]);
    };
    const { order, status, reply } = await bundleWithReads(bundle('transaction', 'w'), patientId, { when: writing, extra });
    expect(status).toBe(200);
    expect(order.indexOf('metadata')).toBeLessThan(order.indexOf('bundle'));
    expect(order.indexOf('read')).toBeLessThan(order.indexOf('bundle'));
    expect(order.indexOf('search')).toBeLessThan(order.indexOf('bundle'));
    expect(seen).toBe(0);
    // the write waited for the transaction's commit (had it run on the store meanwhile, SQLite would have refused it busy)
    expect(reply.entry).toHaveLength(N);
    const last = (await call(fhir.base, 'GET', `Basic?identifier=${encodeURIComponent(`${S}|w-${N - 1}`)}`)).body.entry[0].resource.meta.lastUpdated;
    expect(queued > last).toBe(true);
    expect(await count(`${S}|w-0`)).toBe(1);
  }, 120_000);
});

/**
 * Issue 13: each Bundle entry meets the rules the same request sent alone would (R4 http.html#transaction),
 * conditional delete matching nothing succeeds, DELETE of a never-existing id is 200, and conditions take
 * the `Type?query` form as well as the bare query.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningFhirServer } from '../../../src/fhir/server/start.js';
import { removeTempDirs } from '../../helpers/tmp.js';
import { call, ids, startServer } from './helpers.js';

let server: RunningFhirServer;
let base: string;
const S = 'urn:test:entries';
beforeAll(async () => {
  server = await startServer();
  base = server.url;
});
afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

const bundle = (type: string, entry: unknown[]) => call(base, 'POST', '', { resourceType: 'Bundle', type, entry });
const count = async (path: string) => {
  const r = await call(base, 'GET', path);
  expect(r.status, path).toBe(200);
  return ids(r.body).length;
};
const patient = (value: string) => ({ resourceType: 'Patient', identifier: [{ system: S, value }] });

describe('transaction entries are checked as if sent alone', () => {
  it('a resource whose type is not request.url\'s type fails the whole transaction, naming the entry', async () => {
    const r = await bundle('transaction', [
      { resource: patient('tx-type-ok'), request: { method: 'POST', url: 'Patient' } },
      { resource: { resourceType: 'Observation', identifier: [{ system: S, value: 'tx-type-obs' }], status: 'final', code: { text: 'x' } }, request: { method: 'POST', url: 'Patient' } },
    ]);
    expect(r.status).toBe(400);
    expect(r.body.resourceType).toBe('OperationOutcome');
    expect(r.body.issue[0].expression).toEqual(['Bundle.entry[1]']);
    expect(r.body.issue[0].diagnostics).toContain('does not match request.url');
    expect(await count(`Patient?identifier=${S}|tx-type-ok`)).toBe(0);
    expect(await count(`Observation?identifier=${S}|tx-type-obs`)).toBe(0);
    expect(await count(`Patient?identifier=${S}|tx-type-obs`)).toBe(0);
  });

  it('a PUT whose body id differs from request.url is refused as PUT alone is (400), not rewritten', async () => {
    const r = await bundle('transaction', [{ resource: { ...patient('put-id'), id: 'body-id' }, request: { method: 'PUT', url: 'Patient/url-id' } }]);
    expect(r.status).toBe(400);
    expect(r.body.issue[0].expression).toEqual(['Bundle.entry[0]']);
    expect((await call(base, 'GET', 'Patient/url-id')).status).toBe(404);
  });

  it('an unsupported operation or path fails the transaction with a 4xx naming the entry and the interaction', async () => {
    for (const [method, url] of [['POST', 'ValueSet/$expand'], ['GET', 'Patient/_history'], ['POST', 'Patient/abc'], ['GET', 'Nope/1']]) {
      const r = await bundle('transaction', [
        { resource: patient('tx-unsupported'), request: { method: 'POST', url: 'Patient' } },
        { ...(method === 'POST' ? { resource: { resourceType: 'Parameters' } } : {}), request: { method, url } },
      ]);
      expect(r.status, url).toBeGreaterThanOrEqual(400);
      expect(r.status, url).toBeLessThan(500);
      expect(r.body.issue[0].expression, url).toEqual(['Bundle.entry[1]']);
      expect(await count(`Patient?identifier=${S}|tx-unsupported`)).toBe(0);
    }
    const op = await bundle('transaction', [{ resource: { resourceType: 'Parameters' }, request: { method: 'POST', url: 'ValueSet/$expand' } }]);
    expect(op.body.issue[0].code).toBe('not-supported');
    expect(op.body.issue[0].diagnostics).toContain('ValueSet/$expand');
  });

  it('in a batch, the entry that breaks a rule gets its own 4xx and outcome; the others are applied', async () => {
    const r = await bundle('batch', [
      { resource: patient('batch-ok'), request: { method: 'POST', url: 'Patient' } },
      { resource: { resourceType: 'Observation', status: 'final', code: { text: 'y' } }, request: { method: 'POST', url: 'Patient' } },
      { request: { method: 'GET', url: '$export' } },
      { request: { method: 'GET', url: 'metadata' } },
    ]);
    expect(r.status).toBe(200);
    expect(r.body.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '400', '400', '200 OK']);
    expect(r.body.entry[1].response.outcome.issue[0].expression).toEqual(['Bundle.entry[1]']);
    expect(r.body.entry[2].response.outcome.issue[0].diagnostics).toContain('$export');
    expect(r.body.entry[3].resource.resourceType).toBe('CapabilityStatement');
    expect(await count(`Patient?identifier=${S}|batch-ok`)).toBe(1);
  });
});

describe('deletes that find nothing succeed (R4 http.html#delete)', () => {
  it('a conditional delete matching nothing is 200, alone and inside a transaction with other entries', async () => {
    const alone = await call(base, 'DELETE', `Patient?identifier=${S}|nobody`);
    expect(alone.status).toBe(200);
    const r = await bundle('transaction', [
      { request: { method: 'DELETE', url: `Patient?identifier=${S}|nobody` } },
      { resource: patient('after-noop-delete'), request: { method: 'POST', url: 'Patient' } },
    ]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.entry.map((e: any) => e.response.status)).toEqual(['200 OK', '201 Created']);
    expect(await count(`Patient?identifier=${S}|after-noop-delete`)).toBe(1);
  });

  it('DELETE of an id that never existed is 200 with an OperationOutcome, alone and in a transaction', async () => {
    const alone = await call(base, 'DELETE', 'Patient/never-existed');
    expect(alone.status).toBe(200);
    expect(alone.body.resourceType).toBe('OperationOutcome');
    const r = await bundle('transaction', [{ request: { method: 'DELETE', url: 'Patient/never-existed-either' } }]);
    expect(r.status).toBe(200);
    expect(r.body.entry[0].response.status).toBe('200 OK');
  });
});

describe('conditions in the Type?query form as well as the bare query', () => {
  it('ifNoneExist in a transaction and a batch, and the If-None-Exist header, accept Patient?identifier=…', async () => {
    const first = await bundle('transaction', [{ resource: patient('tq'), request: { method: 'POST', url: 'Patient', ifNoneExist: `Patient?identifier=${S}|tq` } }]);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.entry[0].response.status).toBe('201 Created');
    const tx = await bundle('transaction', [{ resource: patient('tq'), request: { method: 'POST', url: 'Patient', ifNoneExist: `Patient?identifier=${S}|tq` } }]);
    expect(tx.body.entry[0].response.status).toBe('200 OK');
    const batch = await bundle('batch', [{ resource: patient('tq'), request: { method: 'POST', url: 'Patient', ifNoneExist: `Patient?identifier=${S}|tq` } }]);
    expect(batch.body.entry[0].response.status).toBe('200 OK');
    const header = await call(base, 'POST', 'Patient', patient('tq'), { 'if-none-exist': `Patient?identifier=${S}|tq` });
    expect(header.status).toBe(200);
    const bare = await call(base, 'POST', 'Patient', patient('tq'), { 'if-none-exist': `identifier=${S}|tq` });
    expect(bare.status).toBe(200);
    expect(await count(`Patient?identifier=${S}|tq`)).toBe(1);
  });

  it('a condition naming another type is refused (400), not matched against the wrong type', async () => {
    const r = await call(base, 'POST', 'Patient', patient('wrong-type'), { 'if-none-exist': `Observation?identifier=${S}|wrong-type` });
    expect(r.status).toBe(400);
    expect(await count(`Patient?identifier=${S}|wrong-type`)).toBe(0);
  });
});

import { describe, expect, it } from 'vitest';
import { call, ids, useFhirServer } from './helpers.js';

const fhir = useFhirServer();
const S = 'urn:test:tx';

const tx = (entry: unknown[], type = 'transaction') => call(fhir.base, 'POST', '', { resourceType: 'Bundle', type, entry });
const count = async (path: string) => ids((await call(fhir.base, 'GET', path)).body).length;

describe('transaction Bundles (http://hl7.org/fhir/R4/http.html#transaction)', () => {
  it('resolves urn:uuid references, answers in request order with locations and etags', async () => {
    const p = 'urn:uuid:5e0c1a52-0000-4000-8000-000000000001';
    const e = 'urn:uuid:5e0c1a52-0000-4000-8000-000000000002';
    const r = await tx([
      { fullUrl: e, resource: { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: p } }, request: { method: 'POST', url: 'Encounter' } },
      { fullUrl: p, resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'p1' }] }, request: { method: 'POST', url: 'Patient' } },
      { resource: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: p }, encounter: { reference: e } }, request: { method: 'POST', url: 'Observation' } },
    ]);
    expect(r.status).toBe(200);
    expect(r.body.type).toBe('transaction-response');
    expect(r.body.entry).toHaveLength(3);
    expect(r.body.entry.map((x: any) => x.response.status)).toEqual(['201 Created', '201 Created', '201 Created']);
    const locs = r.body.entry.map((x: any) => x.response.location as string);
    expect(locs[0]).toMatch(new RegExp(`^${fhir.base}/Encounter/[^/]+/_history/1$`));
    expect(locs[1]).toMatch(/\/Patient\//);
    expect(r.body.entry[0].response.etag).toBe('W/"1"');
    const patientId = locs[1].split('/')[5];
    const encounterId = locs[0].split('/')[5];
    const obs = (await call(fhir.base, 'GET', locs[2].replace(/\/_history\/1$/, ''))).body;
    expect(obs.subject.reference).toBe(`Patient/${patientId}`);
    expect(obs.encounter.reference).toBe(`Encounter/${encounterId}`);
    expect((await call(fhir.base, 'GET', `Encounter/${encounterId}`)).body.subject.reference).toBe(`Patient/${patientId}`);
  });

  it('ifNoneExist: an existing match is kept (200) and urn:uuid references point at it', async () => {
    const existing = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'keep' }], name: [{ family: 'Original' }] })).body;
    const p = 'urn:uuid:5e0c1a52-0000-4000-8000-000000000010';
    const r = await tx([
      { fullUrl: p, resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'keep' }], name: [{ family: 'Replacement' }] }, request: { method: 'POST', url: 'Patient', ifNoneExist: `identifier=${S}|keep` } },
      { resource: { resourceType: 'Condition', subject: { reference: p }, code: { text: 'c' } }, request: { method: 'POST', url: 'Condition' } },
    ]);
    expect(r.status).toBe(200);
    expect(r.body.entry[0].response.status).toBe('200 OK');
    expect(r.body.entry[0].response.location).toContain(`/Patient/${existing.id}/_history/1`);
    expect((await call(fhir.base, 'GET', `Patient/${existing.id}`)).body.name[0].family).toBe('Original');
    expect(await count(`Condition?subject=Patient/${existing.id}`)).toBe(1);
    expect(await count(`Patient?identifier=${S}|keep`)).toBe(1);
  });

  it('resolves conditional references and conditional PUT; fails when the condition matches none', async () => {
    const target = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'cond-ref' }] })).body;
    const ok = await tx([
      { resource: { resourceType: 'Observation', status: 'final', code: { text: 'y' }, subject: { reference: `Patient?identifier=${S}|cond-ref` } }, request: { method: 'POST', url: 'Observation' } },
      { resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'upsert' }], gender: 'other' }, request: { method: 'PUT', url: `Patient?identifier=${encodeURIComponent(`${S}|upsert`)}` } },
    ]);
    expect(ok.status).toBe(200);
    expect(ok.body.entry[1].response.status).toBe('201 Created');
    expect(await count(`Observation?subject=Patient/${target.id}`)).toBe(1);
    const bad = await tx([
      { resource: { resourceType: 'Observation', status: 'final', code: { text: 'z' }, subject: { reference: `Patient?identifier=${S}|nobody` } }, request: { method: 'POST', url: 'Observation' } },
    ]);
    expect(bad.status).toBe(412);
    expect(bad.body.resourceType).toBe('OperationOutcome');
  });

  it('is all or nothing: a failing entry rolls back every earlier write', async () => {
    const keep = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'rb-existing' }], gender: 'male' })).body;
    const r = await tx([
      { resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'rb-new' }] }, request: { method: 'POST', url: 'Patient' } },
      { resource: { ...keep, gender: 'female' }, request: { method: 'PUT', url: `Patient/${keep.id}` } },
      { request: { method: 'DELETE', url: `Patient/${keep.id}-nope` } },
      { resource: { resourceType: 'Patient', id: 'mismatch' }, request: { method: 'PUT', url: 'Patient/other-id' } },
    ]);
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.body.resourceType).toBe('OperationOutcome');
    expect(r.body.issue[0].diagnostics).toContain('nothing was applied');
    expect(await count(`Patient?identifier=${S}|rb-new`)).toBe(0);
    const now = (await call(fhir.base, 'GET', `Patient/${keep.id}`)).body;
    expect(now.gender).toBe('male');
    expect(now.meta.versionId).toBe('1');
  });

  it('refuses two entries writing the same resource, and a Bundle of the wrong type', async () => {
    const r = await tx([
      { resource: { resourceType: 'Patient', id: 'twice' }, request: { method: 'PUT', url: 'Patient/twice' } },
      { resource: { resourceType: 'Patient', id: 'twice' }, request: { method: 'PUT', url: 'Patient/twice' } },
    ]);
    expect(r.status).toBe(400);
    expect((await call(fhir.base, 'GET', 'Patient/twice')).status).toBe(404);
    expect((await tx([], 'collection')).status).toBe(400);
    expect((await call(fhir.base, 'POST', '', { resourceType: 'Patient' })).status).toBe(400);
  });

  it('processes DELETE before POST before PUT before GET, whatever the entry order', async () => {
    const victim = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'order' }] })).body;
    const r = await tx([
      { request: { method: 'GET', url: `Patient?identifier=${S}|order` } },
      { resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'order' }] }, request: { method: 'POST', url: 'Patient' } },
      { request: { method: 'DELETE', url: `Patient/${victim.id}` } },
    ]);
    expect(r.status).toBe(200);
    // the GET ran last: it sees the new Patient, not the deleted one
    const search = r.body.entry[0].resource;
    expect(search.type).toBe('searchset');
    expect(ids(search)).toHaveLength(1);
    expect(ids(search)[0]).not.toBe(`Patient/${victim.id}`);
    expect(r.body.entry[2].response.status).toBe('200 OK');
  });
});

describe('PATCH entries', () => {
  it('applies a JSON Patch carried as a Binary, in a transaction and in a batch', async () => {
    const p = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', gender: 'male' })).body;
    const binary = (ops: unknown) => ({ resourceType: 'Binary', contentType: 'application/json-patch+json', data: Buffer.from(JSON.stringify(ops)).toString('base64') });
    const t = await tx([{ resource: binary([{ op: 'replace', path: '/gender', value: 'female' }]), request: { method: 'PATCH', url: `Patient/${p.id}` } }]);
    expect(t.status).toBe(200);
    expect(t.body.entry[0].response.status).toBe('200 OK');
    const b = await tx([{ resource: binary([{ op: 'add', path: '/active', value: true }]), request: { method: 'PATCH', url: `Patient/${p.id}` } }], 'batch');
    expect(b.body.entry[0].response.status).toBe('200 OK');
    const now = (await call(fhir.base, 'GET', `Patient/${p.id}`)).body;
    expect(now.gender).toBe('female');
    expect(now.active).toBe(true);
    expect(now.meta.versionId).toBe('3');
  });
});

describe('batch Bundles', () => {
  it('runs entries independently: one failure does not undo the others', async () => {
    const r = await tx(
      [
        { resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'b1' }] }, request: { method: 'POST', url: 'Patient' } },
        { request: { method: 'GET', url: 'Patient/does-not-exist' } },
        { resource: { resourceType: 'Patient', id: 'x' }, request: { method: 'PUT', url: 'Patient/y' } },
        { resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'b2' }] }, request: { method: 'POST', url: 'Patient' } },
      ],
      'batch',
    );
    expect(r.status).toBe(200);
    expect(r.body.type).toBe('batch-response');
    expect(r.body.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '404', '400', '201 Created']);
    expect(r.body.entry[1].response.outcome.resourceType).toBe('OperationOutcome');
    expect(await count(`Patient?identifier=${S}|b1,${S}|b2`)).toBe(2);
  });
});

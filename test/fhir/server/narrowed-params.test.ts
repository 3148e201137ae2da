/**
 * Issue 28: a parameter whose rows include another's (Observation `patient` = `subject` pointing at a Patient,
 * Encounter `practitioner` = `participant.individual` pointing at a Practitioner, `combo-code` = `code` |
 * `component.code`, Patient `name` and `phonetic`) keeps no index row of its own where the other's row says
 * the same; every search must still answer as if it had them all: values, bare ids, :not,
 * :missing, _include, _revinclude, _sort, the Patient compartment (Encounter is in it through `patient`), and a
 * reference that names Patient without parsing as one (kept as the narrowing parameter's own row).
 * Real HTTP against the real server on 127.0.0.1, referential integrity off so targets need not exist.
 */
import { describe, expect, it } from 'vitest';
import { call, ids, useFhirServer } from './helpers.js';

const fhir = useFhirServer({ policy: { referentialIntegrity: false } });

const search = async (path: string): Promise<string[]> => {
  const res = await call(fhir.base, 'GET', path);
  expect(res.status).toBe(200);
  return ids(res.body);
};
const sorted = (xs: string[]): string[] => [...xs].sort();

describe('parameters that narrow another', () => {
  it('answer every search as if they had rows of their own', async () => {
    const put = async (resource: Record<string, unknown>) => expect((await call(fhir.base, 'PUT', `${resource.resourceType}/${resource.id}`, resource)).status).toBe(201);
    await put({ resourceType: 'Patient', id: 'np1', name: [{ family: 'Narrow' }] });
    await put({ resourceType: 'Group', id: 'ng1', type: 'person', actual: true });
    const obs = (id: string, subject?: string) => put({ resourceType: 'Observation', id, status: 'final', code: { text: id }, ...(subject ? { subject: { reference: subject } } : {}) });
    await obs('n-a', 'Patient/np1');
    await obs('n-b', 'Group/ng1');
    await obs('n-c', 'http://elsewhere.example/fhir/Patient/np2');
    await obs('n-d');
    await obs('n-e', 'http://elsewhere.example/Patient/1/Observation/5'); // names Patient, parses as an Observation
    await put({ resourceType: 'Practitioner', id: 'npr1' });
    await put({ resourceType: 'Encounter', id: 'n-enc', status: 'finished', class: { code: 'AMB' }, subject: { reference: 'Patient/np1' }, participant: [{ individual: { reference: 'Practitioner/npr1' } }] });

    const mine = (xs: string[]) => sorted(xs.filter((x) => /\/n-|np|npr|ng/.test(x)));
    expect(mine(await search('Observation?patient=Patient/np1'))).toEqual(['Observation/n-a']);
    expect(mine(await search('Observation?patient=np1'))).toEqual(['Observation/n-a']);
    expect(mine(await search('Observation?subject=Patient/np1'))).toEqual(['Observation/n-a']);
    expect(mine(await search('Observation?patient=np2'))).toEqual(['Observation/n-c']);
    expect(mine(await search('Observation?patient=Group/ng1'))).toEqual([]);
    expect(mine(await search('Observation?subject=Group/ng1'))).toEqual(['Observation/n-b']);
    expect(mine(await search('Observation?patient=Observation/5'))).toEqual(['Observation/n-e']);
    expect(mine(await search('Observation?patient:missing=true&_count=1000'))).toEqual(['Observation/n-b', 'Observation/n-d']);
    expect(mine(await search('Observation?patient:missing=false&_count=1000'))).toEqual(['Observation/n-a', 'Observation/n-c', 'Observation/n-e']);
    expect(mine(await search('Observation?_id=n-a,n-b&_include=Observation:patient'))).toEqual(['Observation/n-a', 'Observation/n-b', 'Patient/np1']);
    expect(mine(await search('Observation?_id=n-a,n-b&_include=Observation:subject'))).toEqual(['Group/ng1', 'Observation/n-a', 'Observation/n-b', 'Patient/np1']);
    expect(mine(await search('Patient?_id=np1&_revinclude=Observation:patient'))).toEqual(['Observation/n-a', 'Patient/np1']);
    expect(mine(await search('Patient?_id=np1&_revinclude=Encounter:patient'))).toEqual(['Encounter/n-enc', 'Patient/np1']);
    expect(await search('Observation?_id=n-a,n-b,n-c,n-d&_sort=patient')).toEqual(['Observation/n-a', 'Observation/n-c', 'Observation/n-b', 'Observation/n-d']);
    expect(mine(await search('Encounter?practitioner=npr1'))).toEqual(['Encounter/n-enc']);
    expect(mine(await search('Encounter?practitioner:missing=false&_id=n-enc'))).toEqual(['Encounter/n-enc']);
    expect(mine(await search('Encounter?_id=n-enc&_include=Encounter:practitioner'))).toEqual(['Encounter/n-enc', 'Practitioner/npr1']);
    // the Encounter is in np1's compartment through its `patient` parameter (HL7 R4 CompartmentDefinition)
    const everything = await call(fhir.base, 'GET', 'Patient/np1/$everything');
    expect(mine(ids(everything.body))).toEqual(['Encounter/n-enc', 'Observation/n-a', 'Patient/np1', 'Practitioner/npr1']);
  });

  it('answer as if they had rows of their own when a part of their expression is another parameter', async () => {
    const put = async (resource: Record<string, unknown>) => expect((await call(fhir.base, 'PUT', `${resource.resourceType}/${resource.id}`, resource)).status).toBe(201);
    const loinc = (code: string) => ({ coding: [{ system: 'http://loinc.org', code }] });
    await put({ resourceType: 'Observation', id: 'c-a', status: 'final', code: loinc('85354-9'), component: [{ code: loinc('8480-6') }, { code: loinc('8462-4') }] });
    await put({ resourceType: 'Observation', id: 'c-b', status: 'final', code: loinc('8480-6') });
    await put({ resourceType: 'Observation', id: 'c-c', status: 'final', code: { text: 'no coding' } });
    await put({ resourceType: 'Patient', id: 'c-p', name: [{ family: 'Combofamily', given: ['Ann'] }] });
    const mine = (xs: string[]) => sorted(xs.filter((x) => /\/c-/.test(x)));
    expect(mine(await search('Observation?combo-code=http://loinc.org|85354-9'))).toEqual(['Observation/c-a']);
    expect(mine(await search('Observation?combo-code=8480-6'))).toEqual(['Observation/c-a', 'Observation/c-b']);
    expect(mine(await search('Observation?code=8480-6'))).toEqual(['Observation/c-b']);
    expect(mine(await search('Observation?component-code=8480-6'))).toEqual(['Observation/c-a']);
    expect(mine(await search('Observation?combo-code:missing=true&_count=1000'))).toEqual(['Observation/c-c']);
    expect(mine(await search('Observation?combo-code:not=8462-4&_count=1000'))).toEqual(['Observation/c-b', 'Observation/c-c']);
    expect(await search('Observation?_id=c-a,c-b,c-c&_sort=-combo-code')).toEqual(['Observation/c-c', 'Observation/c-b', 'Observation/c-a']);
    expect(mine(await search('Patient?name=combofam'))).toEqual(['Patient/c-p']);
    expect(mine(await search('Patient?phonetic=combofam'))).toEqual(['Patient/c-p']);
    expect(mine(await search('Patient?name:exact=ann'))).toEqual(['Patient/c-p']);
  });

  it('keep no row that the parameter they narrow holds', async () => {
    const db = fhir.server.store.db;
    const rows = (code: string, id: string) =>
      (db.prepare(`SELECT count(*) n FROM sp_ref x JOIN param p ON p.pid = x.pid JOIN resource r ON r.rid = x.rid WHERE p.type = 'Observation' AND p.code = ? AND r.id = ?`).get(code, id) as { n: number }).n;
    expect(rows('subject', 'n-a')).toBe(1);
    expect(rows('patient', 'n-a')).toBe(0);
    expect(rows('patient', 'n-e')).toBe(1);
    const tokens = (code: string, id: string) =>
      (db.prepare(`SELECT count(*) n FROM sp_token x JOIN param p ON p.pid = x.pid JOIN resource r ON r.rid = x.rid WHERE p.type = 'Observation' AND p.code = ? AND r.id = ?`).get(code, id) as { n: number }).n;
    expect(tokens('code', 'c-a')).toBe(1);
    expect(tokens('component-code', 'c-a')).toBe(2);
    expect(tokens('combo-code', 'c-a')).toBe(0);
  });
});

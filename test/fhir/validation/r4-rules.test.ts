/**
 * The rules the validator adds to @medplum/core's (issue 24), as functions: the id and reference forms of
 * R4 (datatypes.html#id, references.html), and prototype keys in a resource that did not come through the
 * HTTP parser (which refuses them first; test/fhir/server/r4-write-rules.test.ts covers that path).
 */
import { describe, expect, it } from 'vitest';
import { isR4Id, isR4Reference } from '../../../src/fhir/validation/ids.js';
import { validationIssues } from '../../../src/fhir/validation/validate.js';

describe('R4 ids', () => {
  it.each([['a'], ['A-1.b'], ['x'.repeat(64)], ['...']])('%j is an id', (id) => expect(isR4Id(id)).toBe(true));
  it.each([[''], ['.'], ['..'], ['x'.repeat(65)], ['a b'], ['a/b'], ['a_b'], ['é']])('%j is not', (id) => expect(isR4Id(id)).toBe(false));
});

describe('R4 literal references', () => {
  it.each([
    ['Patient/1'], ['Patient/1/_history/2'], ['#p1'], ['#'], ['http://example.org/fhir/Patient/1'], ['https://example.org/x?y=1'],
    ['urn:uuid:0b2c8d3a-2a5e-4b2f-9f2f-1d2e3f4a5b6c'], ['urn:oid:2.16.840.1.113883'],
  ])('%j is a reference', (ref) => expect(isR4Reference(ref)).toBe(true));
  it.each([
    ['../../etc/passwd'], ['Patient/..'], ['Patient/.'], ['Patient/1/_history/..'], ['Foo/1'], ['patient/1'], ['Patient/'], ['Patient'], ['/Patient/1'],
    ['javascript:alert(1)'], ['file:///etc/passwd'], ['http://x/a/../b'], ['http://'], ['urn:uuid:x'], ['urn:oid:3.1'], ['urn:isbn:1'], ['#a/b'], ['Patient/1 '],
    ['Patient?identifier=x'],
  ])('%j is not', (ref) => expect(isR4Reference(ref)).toBe(false));
  it('a conditional reference only where the caller allows it (inside a transaction)', () => {
    expect(isR4Reference('Patient?identifier=urn:x|1', true)).toBe(true);
    expect(isR4Reference('Foo?identifier=1', true)).toBe(false);
    expect(isR4Reference('Patient?', true)).toBe(false);
  });
});

describe('prototype keys in a resource built in process', () => {
  it.each([['__proto__'], ['constructor'], ['prototype']])('%s anywhere is an issue naming its path, and nothing else is looked at', (key) => {
    const r = JSON.parse(`{"resourceType":"Patient","name":[{"family":"x","${key}":{}}]}`);
    expect(validationIssues(r)).toEqual([expect.objectContaining({ expression: [`Patient.name[0].${key}`] })]);
  });
});

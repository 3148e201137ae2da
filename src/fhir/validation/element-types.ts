/**
 * What @medplum/core's `validateResource` leaves out, checked over the same element tree with its own
 * crawler (`crawlTypedValue`, the walk its validator makes over the R4 StructureDefinitions):
 *
 * - a complex-typed element must hold a JSON object (R4 json.html#complex: "complex datatypes …
 *   are represented as JSON objects"). Medplum checks primitives' JSON types and the inside of objects,
 *   but takes `{"resourceType":"Basic","code":5}` (Basic.code is a CodeableConcept) as valid;
 * - every Reference.reference is one of the literal forms R4 defines (ids.ts), wherever a Reference
 *   appears (nested, in a choice such as `valueReference`, in contained resources).
 */
import { crawlTypedValue, isPrimitiveType, type CrawlerVisitor, type TypedValue } from '@medplum/core';
import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isR4Reference } from './ids.js';

export interface ValidationOptions {
  /** Inside a transaction: conditional references (`Patient?identifier=…`) are accepted, the transaction resolves them. */
  conditionalReferences?: boolean;
}

interface Valued {
  type: string;
  value: unknown;
  path: string;
}

function issue(path: string, text: string): OperationOutcomeIssue {
  return { severity: 'error', code: 'structure', details: { text }, expression: [path] };
}

function jsonType(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/** Findings for complex elements holding a non-object and for malformed references; empty when none. */
export function elementIssues(resource: { resourceType: string }, options: ValidationOptions = {}): OperationOutcomeIssue[] {
  const issues: OperationOutcomeIssue[] = [];
  const check = (v: Valued): void => {
    if (v.value === undefined || isPrimitiveType(v.type)) return;
    if (!v.value || typeof v.value !== 'object' || Array.isArray(v.value)) {
      issues.push(issue(v.path, `Invalid JSON type: expected an object (${v.type}), but got ${jsonType(v.value)}`));
      return;
    }
    if (v.type === 'Reference') {
      const ref = (v.value as { reference?: unknown }).reference;
      if (typeof ref === 'string' && !isR4Reference(ref, options.conditionalReferences)) {
        issues.push(issue(`${v.path}.reference`, `Invalid reference "${ref.slice(0, 100)}": expected Type/id[/_history/vid], an http(s) URL, urn:uuid:, urn:oid: or #id`));
      }
    }
  };
  const visitor: CrawlerVisitor = {
    visitProperty(_parent, _key, _path, values) {
      for (const value of values) {
        if (Array.isArray(value)) for (const v of value) check(v as Valued);
        else check(value as Valued);
      }
    },
  };
  crawlTypedValue({ type: resource.resourceType, value: resource } as TypedValue, visitor);
  return issues;
}

/**
 * What @medplum/core's `validateResource` leaves out, checked over the R4 StructureDefinitions as Medplum
 * indexed them (`getDataType`: each type's elements, their types, and the resource's backbone types):
 *
 * - a complex-typed element must hold a JSON object (R4 json.html#complex: "complex datatypes …
 *   are represented as JSON objects"). Medplum checks primitives' JSON types and the inside of objects,
 *   but takes `{"resourceType":"Basic","code":5}` (Basic.code is a CodeableConcept) as valid;
 * - every Reference.reference is one of the literal forms R4 defines (ids.ts), wherever a Reference
 *   appears (nested, in a choice such as `valueReference`, in contained or Bundle entry resources).
 *
 * - a code of an element bound as required to an enumerable ValueSet is one of its codes
 *   (required-bindings.ts, issue #47).
 *
 * Only the keys present are walked (Medplum's own crawler visits every element of every type, ~3x
 * slower over HL7's examples). Unknown keys, wrong cardinality and primitives are left to Medplum.
 */
import { getDataType, isPrimitiveType, isResourceType, type InternalTypeSchema } from '@medplum/core';
import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { isR4Reference } from './ids.js';
import { bindingFinding, extensibleFinding, requiredValueSet, type BoundValueSet } from './required-bindings.js';

export interface ValidationOptions {
  /** Inside a transaction: conditional references (`Patient?identifier=…`) are accepted, the transaction resolves them. */
  conditionalReferences?: boolean;
}

interface WalkOptions extends ValidationOptions {
  /** `$validate` only: also collect warnings for codes outside an extensible binding. */
  warnings?: boolean;
}

function issue(path: string, text: string): OperationOutcomeIssue {
  return { severity: 'error', code: 'structure', details: { text }, expression: [path] };
}

function jsonType(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

const capitalized = (code: string): string => code.charAt(0).toUpperCase() + code.slice(1);

/** `binding`/`extensible`: the enumerable ValueSet the element binds as required / extensible, if any. */
type KeyType = { code: string; isArray: boolean; binding?: BoundValueSet | undefined; extensible?: BoundValueSet | undefined } | undefined;

/**
 * Each type's key → element type, worked out once per (type schema, key) and kept: the schemas are
 * Medplum's indexed StructureDefinitions, fixed for the process, so the answer never changes (a choice key
 * otherwise scans every element of the type, for every resource written).
 */
const keyTypes = new WeakMap<InternalTypeSchema, Map<string, KeyType>>();

function typeOfKey(schema: InternalTypeSchema, key: string): KeyType {
  let byKey = keyTypes.get(schema);
  if (!byKey) keyTypes.set(schema, (byKey = new Map()));
  if (byKey.has(key)) return byKey.get(key);
  const type = elementTypeOfKey(schema, key);
  // bounded: keys outside the type's elements (refused by Medplum anyway) are not kept
  if (type || byKey.size < 1000) byKey.set(key, type);
  return type;
}

/** The element type of a JSON key: a plain element (one type) or a choice (`valueQuantity` → `value[x]` as Quantity). */
function elementTypeOfKey(schema: InternalTypeSchema, key: string): KeyType {
  const element = schema.elements[key];
  if (element) {
    if (element.type.length !== 1) return undefined;
    return { code: element.type[0]!.code, isArray: !!element.isArray, binding: requiredValueSet(element), extensible: requiredValueSet(element, 'extensible') };
  }
  for (const [name, choice] of Object.entries(schema.elements)) {
    if (!name.endsWith('[x]')) continue;
    const prefix = name.slice(0, -3);
    if (!key.startsWith(prefix)) continue;
    const t = choice.type.find((x) => capitalized(x.code) === key.slice(prefix.length));
    if (t) return { code: t.code, isArray: false, binding: requiredValueSet(choice), extensible: requiredValueSet(choice, 'extensible') };
  }
  return undefined;
}

class Walk {
  readonly issues: OperationOutcomeIssue[] = [];
  readonly warnings: OperationOutcomeIssue[] = [];
  constructor(private readonly options: WalkOptions) {}

  resource(value: Record<string, unknown>, path: string): void {
    const type = value.resourceType;
    if (typeof type !== 'string' || !isResourceType(type)) return; // Medplum names an unknown type
    const schema = getDataType(type);
    this.object(value, schema, schema, path);
  }

  /** `owner` is the type whose backbone types (innerTypes) nested elements may name. */
  private object(value: Record<string, unknown>, schema: InternalTypeSchema, owner: InternalTypeSchema, path: string): void {
    for (const key of Object.keys(value)) {
      if (key === 'resourceType' || key.startsWith('_')) continue;
      const type = typeOfKey(schema, key);
      if (!type) continue;
      const v = value[key];
      if (type.binding) this.binding(type.binding, type, v, `${path}.${key}`);
      else if (type.extensible && this.options.warnings) this.binding(type.extensible, type, v, `${path}.${key}`, true);
      if (isPrimitiveType(type.code)) continue;
      if (type.isArray && Array.isArray(v)) v.forEach((item, i) => this.value(item, type.code, owner, `${path}.${key}[${i}]`));
      else if (!type.isArray || !Array.isArray(v)) this.value(v, type.code, owner, `${path}.${key}`);
    }
  }

  /** Each value of a required-bound element (an array's items by index) against its ValueSet. */
  private binding(vs: BoundValueSet, type: NonNullable<KeyType>, v: unknown, path: string, extensible = false): void {
    const values = type.isArray && Array.isArray(v) ? v : [v];
    values.forEach((item, i) => {
      const at = values === v ? `${path}[${i}]` : path;
      const found = extensible ? extensibleFinding(vs, type.code, item, at) : bindingFinding(vs, type.code, item, at);
      if (found) (extensible ? this.warnings : this.issues).push(found);
    });
  }

  private value(v: unknown, code: string, owner: InternalTypeSchema, path: string): void {
    if (v === undefined || v === null) return; // Medplum reports null
    if (typeof v !== 'object' || Array.isArray(v)) {
      this.issues.push(issue(path, `Invalid JSON type: expected an object (${code}), but got ${jsonType(v)}`));
      return;
    }
    const obj = v as Record<string, unknown>;
    if (code === 'Resource' || code === 'DomainResource') return this.resource(obj, path);
    if (code === 'Reference') {
      const ref = obj.reference;
      if (typeof ref === 'string' && !isR4Reference(ref, this.options.conditionalReferences)) {
        this.issues.push(issue(`${path}.reference`, `Invalid reference "${ref.slice(0, 100)}": expected Type/id[/_history/vid], an http(s) URL, urn:uuid:, urn:oid: or #id`));
      }
    }
    const inner = owner.innerTypes.find((t) => t.name === code);
    if (inner) return this.object(obj, inner, owner, path);
    let schema: InternalTypeSchema;
    try {
      schema = getDataType(code);
    } catch {
      return; // a type Medplum has no schema for: nothing more to check here
    }
    this.object(obj, schema, schema, path);
  }
}

/** Findings for complex elements holding a non-object, malformed references and codes outside a required binding; empty when none. */
export function elementIssues(resource: Record<string, unknown>, options: ValidationOptions = {}): OperationOutcomeIssue[] {
  const walk = new Walk(options);
  walk.resource(resource, String(resource.resourceType));
  return walk.issues;
}

/** `$validate`'s warnings: codes outside an enumerable extensible binding (never an error; writes do not look). */
export function bindingWarnings(resource: Record<string, unknown>): OperationOutcomeIssue[] {
  const walk = new Walk({ warnings: true });
  walk.resource(resource, String(resource.resourceType));
  return walk.warnings;
}

/**
 * A validator compiled once per type from the R4 StructureDefinitions as @medplum/core indexed them
 * (issue 49): it answers only "Medplum's `validateResource` finds no error here", or "ask Medplum".
 *
 * Medplum's validator (typeschema/validation.ts with its crawler, typeschema/crawler.ts) walks every
 * element of a type's schema for every object it meets, present or not: each absent choice element
 * tries each of its types by name (Extension.value[x] has about 50), each value is wrapped with its
 * path, and the keys are matched to elements again by splitting them at capitals. That walk was most
 * of the server's CPU per ingested resource. Here each type's elements are turned once into a table
 * from JSON key to what the key must hold (cardinality, JSON type, primitive format, the FHIRPath
 * invariants of the element), and a resource is walked over its own keys only.
 *
 * It never produces a finding: a resource it does not pass goes to Medplum's `validateResource`, whose
 * issues are then what they always were. So only one direction has to hold, and it is kept narrow:
 * the compiled check passes a resource only when every rule Medplum applies to it is met, and it
 * defers on everything it does not model: a null, an empty value, a key it cannot place (unknown,
 * `_`-prefixed primitive extensions, two types of one choice), a contained or nested resource, a
 * fixed or pattern value, a sliced element, an invariant that is not exactly true or that throws,
 * an element whose type Medplum resolves differently from the schema walked. The invariants are
 * evaluated by Medplum's own FHIRPath (`evalFhirPathTyped`) with the inputs and variables its
 * validator gives them, parsed once per expression instead of per lookup. The differential test
 * (test/fhir/validation/compiled-check.test.ts) runs both over HL7's examples, the synthetic data,
 * the invalid corpus and mutations of valid resources, and requires the same findings.
 */
import {
  evalFhirPathTyped,
  fhirTypeToJsType,
  getElementDefinition,
  isEmpty,
  isPrimitiveType,
  isResourceType,
  parseFhirPath,
  toTypedValue,
  tryGetDataType,
  UCUM,
  validationRegexes,
  type InternalSchemaElement,
  type InternalTypeSchema,
  type TypedValue,
} from '@medplum/core';

/**
 * Invariants Medplum's validator does not evaluate (`skippedConstraintKeys` in @medplum/core
 * src/typeschema/validation.ts, 5.2.13): ele-1 on every element, dom-3 (needs descendants()), org-1,
 * sdf-19. A constraint of these keys is skipped here too; any other error-severity one is evaluated.
 */
const SKIPPED_CONSTRAINTS: ReadonlySet<string> = new Set(['ele-1', 'dom-3', 'org-1', 'sdf-19']);

/** Medplum's limits on a string and on a base64Binary's decoded size (validation.ts: 1 MB each). */
const MAX_STRING = 1024 * 1024;
const MAX_BASE64_BYTES = 1024 * 1024;
const INT_MIN = -2_147_483_648;
const INT_MAX = 2_147_483_647;
/** R4 base64Binary as Medplum checks it: alphabet characters, then at most two '=' (length % 4 checked apart). */
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

type JsType = 'string' | 'number' | 'boolean';

interface Invariant {
  atom: ReturnType<typeof parseFhirPath>;
  /** An element whose absence from the context object makes the invariant true (TRUE_WITHOUT). */
  trueWithout: string | undefined;
}

/**
 * Invariants true by FHIRPath's own rules when the context object lacks one element, so not evaluated
 * then (they were most of the evaluation time of the synthetic data's invariants). A path from an absent
 * element is the empty collection and `empty()` of it is true (FHIRPath N1 §5.1.1), `true and true` is
 * true and `true or x` is true (§6.5); the other operand of each `or` here is an `empty()` of a path,
 * which cannot throw, so Medplum's evaluation of it (it evaluates both operands) is true as well.
 * dom-2, dom-4, dom-5 are every DomainResource's (R4 domainresource.html), obs-6 and obs-7 Observation's
 * (R4 observation.html#invs). The differential test covers each with its element present and violated.
 */
const TRUE_WITHOUT: ReadonlyMap<string, string> = new Map([
  ['contained.contained.empty()', 'contained'],
  ['contained.meta.versionId.empty() and contained.meta.lastUpdated.empty()', 'contained'],
  ['contained.meta.security.empty()', 'contained'],
  ['dataAbsentReason.empty() or value.empty()', 'dataAbsentReason'],
  ['value.empty() or component.code.where(coding.intersect(%resource.code.coding).exists()).empty()', 'component'],
]);

/** What one JSON key of a type must hold. */
interface Slot {
  /** The schema's element name (`value[x]` for a choice): Medplum's paths use it. */
  readonly name: string;
  readonly element: InternalSchemaElement;
  /** The type the key's value has (for a choice, the type its suffix names). */
  readonly code: string;
  /** Primitive: the JSON type it must have; undefined for a complex type. */
  readonly js: JsType | undefined;
  readonly invariants: readonly Invariant[];
  /** Index among the type's required elements (min > 0), or -1. */
  readonly required: number;
  /** A choice element's index among the type's choices (two of its types present defer), or -1. */
  readonly choice: number;
  /** False: present, it defers to Medplum (see the header). */
  readonly supported: boolean;
  /** The compiled type of a complex value, made on first use. */
  child?: CompiledType | null;
  /** The schema whose innerTypes Medplum's crawler searches first for the value's type. */
  readonly owner: InternalTypeSchema;
}

interface CompiledType {
  readonly supported: boolean;
  readonly slots: ReadonlyMap<string, Slot>;
  readonly requiredCount: number;
  readonly choiceCount: number;
}

const UNSUPPORTED: CompiledType = { supported: false, slots: new Map(), requiredCount: 0, choiceCount: 0 };

/** Compiled types by (schema, type name): the registry is fixed once the definitions are loaded. */
const compiled = new WeakMap<InternalTypeSchema, Map<string, CompiledType>>();
/** Root invariants by resource schema. */
const rootInvariants = new WeakMap<InternalTypeSchema, readonly Invariant[] | null>();
const atoms = new Map<string, Invariant | null>();

function invariant(expression: string): Invariant | null {
  let found = atoms.get(expression);
  if (found === undefined) {
    try {
      found = { atom: parseFhirPath(expression), trueWithout: TRUE_WITHOUT.get(expression) };
    } catch {
      found = null; // Medplum reports a parse failure as an issue: such an element defers
    }
    atoms.set(expression, found);
  }
  return found;
}

/** The error-severity invariants Medplum evaluates for an element or a type; null when one cannot be parsed. */
function invariantsOf(constraints: InternalSchemaElement['constraints']): Invariant[] | null {
  const out: Invariant[] = [];
  for (const c of constraints ?? []) {
    if (c.severity !== 'error' || SKIPPED_CONSTRAINTS.has(c.key)) continue;
    const inv = invariant(c.expression);
    if (!inv) return null;
    out.push(inv);
  }
  return out;
}

const capitalize = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * The element Medplum's key check (validation.ts isChoiceOfType) takes a key for: the first prefix,
 * cut before a capital, that names a choice element.
 */
function choiceNamedBy(key: string, elements: Record<string, InternalSchemaElement>): string | undefined {
  let prefix = '';
  for (const part of key.split(/(?=[A-Z])/)) {
    prefix += part;
    if (elements[`${prefix}[x]`]) return `${prefix}[x]`;
  }
  return undefined;
}

function slotsOf(typeName: string, schema: InternalTypeSchema): CompiledType {
  const elements = schema.elements;
  const slots = new Map<string, Slot>();
  let requiredCount = 0;
  let choiceCount = 0;
  for (const name of Object.keys(elements)) {
    const element = elements[name]!;
    // a dotted key is read by Medplum as a nested path; an element found under another definition by the
    // property lookup Medplum's crawler uses (fhirpath/utils.ts getTypedPropertyValue) is not this one
    if (name.includes('.') || getElementDefinition(typeName, name) !== element) return UNSUPPORTED;
    const required = element.min > 0 ? requiredCount++ : -1;
    const invariants = invariantsOf(element.constraints);
    const plain = !!invariants && !element.fixed && !element.pattern && !element.slicing;
    if (name.endsWith('[x]')) {
      const prefix = name.slice(0, -3);
      if (elements[prefix]) return UNSUPPORTED; // Medplum's lookup of `prefix` would find the other element
      const choice = choiceCount++;
      for (const t of element.type) {
        const key = prefix + capitalize(t.code);
        if (slots.has(key)) continue; // the first type of that name is the one Medplum reads
        slots.set(key, slot(name, element, t.code, invariants ?? [], required, choice, plain && choiceNamedBy(key, elements) === name, schema));
      }
    } else {
      const code = element.type[0]?.code;
      if (element.type.length !== 1 || !code) return UNSUPPORTED;
      slots.set(name, slot(name, element, code, invariants ?? [], required, -1, plain, schema));
    }
  }
  return { supported: true, slots, requiredCount, choiceCount };
}

function slot(name: string, element: InternalSchemaElement, code: string, invariants: Invariant[], required: number, choice: number, plain: boolean, owner: InternalTypeSchema): Slot {
  const primitive = isPrimitiveType(code);
  const js = primitive ? (fhirTypeToJsType as Record<string, JsType>)[code] : undefined;
  // a primitive type Medplum has no JSON type for, or a resource held in an element (contained, Bundle entries), defers
  const supported = plain && (primitive ? !!js : code !== 'Resource' && code !== 'DomainResource' && !isResourceType(code));
  return { name, element, code, js, invariants, required, choice, supported, owner };
}

function compiledType(typeName: string, schema: InternalTypeSchema): CompiledType {
  let byName = compiled.get(schema);
  if (!byName) compiled.set(schema, (byName = new Map()));
  let type = byName.get(typeName);
  if (!type) byName.set(typeName, (type = slotsOf(typeName, schema)));
  return type;
}

/** The compiled type of a slot's complex value: the schema Medplum's crawler would walk it with. */
function childOf(s: Slot): CompiledType | null {
  if (s.child !== undefined) return s.child;
  const schema = s.owner.innerTypes?.find((t) => t.name === s.code) ?? tryGetDataType(s.code);
  s.child = schema ? compiledType(s.code, schema) : null;
  return s.child;
}

/** Medplum's primitive checks (validation.ts validatePrimitiveType): true only when none of them finds anything. */
function primitivePasses(value: unknown, code: string, js: JsType): boolean {
  if (typeof value !== js) return false;
  if (js === 'boolean') return true;
  if (js === 'number') {
    const n = value as number;
    if (!Number.isFinite(n)) return false;
    if (code === 'integer') return Number.isInteger(n) && n >= INT_MIN && n <= INT_MAX;
    if (code === 'positiveInt') return Number.isInteger(n) && n >= 1 && n <= INT_MAX;
    if (code === 'unsignedInt') return Number.isInteger(n) && n >= 0 && n <= INT_MAX;
    return true;
  }
  const s = value as string;
  if (code === 'base64Binary') return s.length % 4 === 0 && (s.length * 3) / 4 <= MAX_BASE64_BYTES && BASE64.test(s);
  if (s.length > MAX_STRING || !s.trim()) return false;
  const regex = validationRegexes[code];
  if (regex && !regex.exec(s)) return false;
  return !(code === 'date' || code === 'dateTime' || code === 'instant') || dayExists(s);
}

/**
 * Whether the day of a date the type's regex has passed exists in its month (2023-02-29 does not), as
 * Medplum's `isValidCalendarDate` decides it, by arithmetic instead of a Date per value: the regex allows
 * years 0001-9999, where Medplum's Date.UTC reads 1-99 as 1901-1999, which have the same leap years.
 * Exported for its test against Medplum's over every year.
 */
export function dayExists(s: string): boolean {
  if (s.length < 10) return true;
  const year = Number(s.slice(0, 4));
  const month = Number(s.slice(5, 7));
  const day = Number(s.slice(8, 10));
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return day <= (month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31);
}

class Check {
  private readonly variables: Record<string, TypedValue>;

  constructor(root: TypedValue) {
    // the variables Medplum's validator gives every invariant (validation.ts isExpressionTrue)
    this.variables = { '%ucum': toTypedValue(UCUM), '%resource': toTypedValue(root.value), '%rootResource': root };
  }

  holds(invariants: readonly Invariant[], value: TypedValue & { path: string }): boolean {
    if (invariants.length === 0) return true;
    const context = typeof value.value === 'object' ? (value.value as Record<string, unknown>) : undefined;
    let variables: Record<string, TypedValue> | undefined;
    for (const { atom, trueWithout } of invariants) {
      if (trueWithout !== undefined && context && context[trueWithout] === undefined) continue;
      variables ??= { ...this.variables, '%context': value };
      let result: TypedValue[];
      try {
        result = evalFhirPathTyped(atom, [value], variables);
      } catch {
        return false;
      }
      if (result.length !== 1 || result[0]!.value !== true) return false;
    }
    return true;
  }

  object(obj: Record<string, unknown>, type: CompiledType, path: string, root: boolean): boolean {
    if (!type.supported) return false;
    let required = 0;
    let choices = 0; // a bit per choice seen (types have far fewer than 31 choices; more defer)
    if (type.choiceCount > 30) return false;
    for (const key of Object.keys(obj)) {
      if (key === 'resourceType' && root) continue;
      const s = type.slots.get(key);
      if (!s || !s.supported) return false;
      const value = obj[key];
      if (value === null || value === undefined || isEmpty(value)) return false;
      if (s.choice >= 0) {
        if (choices & (1 << s.choice)) return false;
        choices |= 1 << s.choice;
      }
      if (s.required >= 0) required++;
      const element = s.element;
      const at = `${path}.${s.name}`;
      if (element.isArray) {
        if (!Array.isArray(value) || value.length < element.min || value.length > element.max) return false;
        for (let i = 0; i < value.length; i++) if (!this.value(value[i], s, `${at}[${i}]`)) return false;
      } else {
        if (Array.isArray(value) || element.min > 1 || element.max < 1) return false;
        if (!this.value(value, s, at)) return false;
      }
    }
    return required === type.requiredCount;
  }

  private value(v: unknown, s: Slot, path: string): boolean {
    if (v === null || v === undefined || isEmpty(v)) return false;
    if (s.js !== undefined) {
      if (!primitivePasses(v, s.code, s.js)) return false;
    } else {
      if (typeof v !== 'object' || Array.isArray(v) || 'resourceType' in v) return false;
    }
    if (!this.holds(s.invariants, { type: s.code, value: v, path })) return false;
    if (s.js !== undefined) return true;
    const child = childOf(s);
    return !!child && this.object(v as Record<string, unknown>, child, path, false);
  }
}

/**
 * True when @medplum/core's `validateResource` is certain to find no error in `resource`; false means
 * "not known here" (ask Medplum), never "invalid". The R4 definitions must be loaded (validate.ts).
 */
export function compiledCheckPasses(resource: Record<string, unknown>): boolean {
  const type = resource.resourceType;
  if (typeof type !== 'string' || !isResourceType(type)) return false;
  const root = toTypedValue(resource);
  if (root.type !== type) return false; // Medplum would take it for another type (a Quantity-like object)
  const schema = tryGetDataType(type);
  if (!schema) return false;
  let inv = rootInvariants.get(schema);
  if (inv === undefined) rootInvariants.set(schema, (inv = invariantsOf(schema.constraints)));
  if (!inv) return false;
  const check = new Check(root);
  if (!check.holds(inv, { ...root, path: schema.path })) return false;
  return check.object(resource, compiledType(type, schema), schema.path, true);
}

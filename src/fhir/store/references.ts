/**
 * Every `Type/id` a resource points at, found by walking the whole JSON for
 * `reference` strings (not only the indexed parameters), so `$everything` can
 * add Practitioner, Organization, Location, Medication, Device … (http://hl7.org/fhir/R4/patient-operation-everything.html).
 */
import { parseReference } from './index-rows.js';
import type { Resource, ResourceRef } from './types.js';

/**
 * The walk is most of a 1,000-resource `$everything` page after the JSON parse (issue 49), so it allocates
 * nothing per object (for…in over the parsed JSON's own keys, not Object.entries) and looks at each distinct
 * reference string once: a patient's resources repeat the same few (`Patient/x`, their practitioner's), and a
 * string seen before adds nothing new to the answer.
 */
export function collectReferences(resources: Resource[]): ResourceRef[] {
  const seen = new Set<string>();
  const strings = new Set<string>();
  const out: ResourceRef[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const x of node) visit(x);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const obj = node as Record<string, unknown>;
    for (const key in obj) {
      if (!Object.hasOwn(obj, key)) continue;
      const value = obj[key];
      if (key === 'reference' && typeof value === 'string') {
        if (strings.has(value)) continue;
        strings.add(value);
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

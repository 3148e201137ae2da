/**
 * Referential integrity on write, as HAPI FHIR JPA enforces it by default (a reference to a missing
 * target → 400, "Resource X not found, specified in path: …"). Checked after the write, inside the
 * same SQLite transaction, so a resource may point at itself and a transaction's entries at each other
 * (their urn:uuid and conditional references are rewritten to `Type/id` first).
 * Checked: relative `Type/id` (and `Type/id/_history/v`) references, and absolute ones under this
 * server's public base. Not checked: `#contained`, other servers' URLs, `urn:` identifiers, logical
 * references (Reference.identifier only).
 */
import { HospitalApiError } from '../../errors/index.js';
import type { Resource } from '../store/types.js';
import type { FhirContext } from './context.js';
import { isResourceType } from './resource-types.js';

const RELATIVE = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/;

/** `Type/id` targets a resource names, with the FHIRPath-like location of each (first one seen). */
export function localReferences(resource: Resource, base: string): Map<string, string> {
  const out = new Map<string, string>();
  const prefix = `${base}/`;
  const stack: Array<[unknown, string]> = [[resource, resource.resourceType]];
  while (stack.length) {
    const [node, path] = stack.pop()!;
    if (Array.isArray(node)) {
      node.forEach((x, i) => stack.push([x, `${path}[${i}]`]));
      continue;
    }
    if (!node || typeof node !== 'object') continue;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'reference' && typeof value === 'string') {
        const rel = value.startsWith(prefix) ? value.slice(prefix.length) : value;
        const m = RELATIVE.exec(rel);
        if (m && isResourceType(m[1]!)) {
          const target = `${m[1]}/${m[2]}`;
          if (!out.has(target)) out.set(target, `${path}.reference`);
        }
      } else if (value && typeof value === 'object') stack.push([value, `${path}.${key}`]);
    }
  }
  return out;
}

/** Throws ERR_FHIR_REFERENCE_NOT_FOUND (400) for the first reference whose target is not stored. */
export function checkReferences(ctx: FhirContext, resource: Resource, where?: string): void {
  if (!ctx.policy.referentialIntegrity) return;
  for (const [target, path] of localReferences(resource, ctx.base)) {
    const [type, id] = target.split('/') as [string, string];
    if (!ctx.store.exists(type, id)) {
      throw new HospitalApiError('ERR_FHIR_REFERENCE_NOT_FOUND', { detail: `${where ? `${where}: ` : ''}${target}, specified in path ${path}` });
    }
  }
}

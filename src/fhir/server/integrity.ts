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
  return collect(resource, base, true);
}

/**
 * One walk for both: with `paths` false no location string is built (locations are needed only for a
 * refusal's message, and building one per node was most of the walk's cost); the targets come in the same order.
 * The walk runs on every resource written (issue 49: a write-path cost), so it allocates nothing per node: two
 * parallel stacks instead of a [node, path] pair each, and for…in over the parsed JSON's own keys instead of
 * Object.entries (the same keys in the same order: ECMA-262 OrdinaryOwnPropertyKeys, and JSON.parse's objects
 * inherit no enumerable key).
 */
function collect(resource: Resource, base: string, paths: boolean): Map<string, string> {
  const out = new Map<string, string>();
  const prefix = `${base}/`;
  const nodes: unknown[] = [resource];
  const at: string[] = [paths ? resource.resourceType : ''];
  while (nodes.length) {
    const node = nodes.pop();
    const path = at.pop()!;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        nodes.push(node[i]);
        at.push(paths ? `${path}[${i}]` : '');
      }
      continue;
    }
    if (!node || typeof node !== 'object') continue;
    const obj = node as Record<string, unknown>;
    for (const key in obj) {
      if (!Object.hasOwn(obj, key)) continue;
      const value = obj[key];
      if (key === 'reference' && typeof value === 'string') {
        const rel = value.startsWith(prefix) ? value.slice(prefix.length) : value;
        const m = RELATIVE.exec(rel);
        if (m && isResourceType(m[1]!)) {
          const target = `${m[1]}/${m[2]}`;
          if (!out.has(target)) out.set(target, paths ? `${path}.reference` : '');
        }
      } else if (value && typeof value === 'object') {
        nodes.push(value);
        at.push(paths ? `${path}.${key}` : '');
      }
    }
  }
  return out;
}

/**
 * Throws ERR_FHIR_REFERENCE_NOT_FOUND (400) for the first reference whose target is not stored. `known`:
 * targets already found stored in this same state of the store (a transaction's checks after all its
 * writes), not asked again; targets found are added to it.
 */
export function checkReferences(ctx: FhirContext, resource: Resource, where?: string, known?: Set<string>): void {
  if (!ctx.policy.referentialIntegrity) return;
  for (const target of collect(resource, ctx.base, false).keys()) {
    if (known?.has(target)) continue;
    const slash = target.indexOf('/');
    if (!ctx.store.exists(target.slice(0, slash), target.slice(slash + 1))) {
      const path = localReferences(resource, ctx.base).get(target);
      throw new HospitalApiError('ERR_FHIR_REFERENCE_NOT_FOUND', { detail: `${where ? `${where}: ` : ''}${target}, specified in path ${path}` });
    }
    known?.add(target);
  }
}

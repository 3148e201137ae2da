/**
 * create / update / patch / delete and their conditional forms (fhir.md §4):
 * conditional create 0 → 201, 1 → 200 (no write), >1 → 412; conditional update
 * 0 → create, 1 → update (400 if the body id differs), >1 → 412; conditional
 * delete 0 or 1 → 200, >1 → 412; If-Match mismatch → 412.
 */
import { HospitalApiError } from '../../errors/index.js';
import type { Resource } from '../store/types.js';
import { etagOf, httpDate, versionFromEtag, type FhirContext, type FhirRequest, type FhirResponse } from './context.js';
import { applyJsonPatch } from './json-patch.js';
import { outcome } from './outcome.js';

const ID = /^[A-Za-z0-9\-.]{1,64}$/;

function checkBody(type: string, body: unknown): Resource {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: 'the body must be a JSON resource' });
  }
  const r = body as Resource;
  if (r.resourceType !== type) {
    throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: `resourceType "${String(r.resourceType)}" does not match the URL type ${type}` });
  }
  return r;
}

export function written(ctx: FhirContext, resource: Resource, status: number, preferReturn?: string): FhirResponse {
  const v = resource.meta?.versionId as string;
  const lastUpdated = resource.meta?.lastUpdated as string;
  const res: FhirResponse = {
    status,
    location: `${ctx.base}/${resource.resourceType}/${resource.id}/_history/${v}`,
    etag: etagOf(v),
    lastModified: httpDate(lastUpdated),
  };
  if (preferReturn === 'OperationOutcome') res.body = outcome(200, `${resource.resourceType}/${resource.id} version ${v} stored`);
  else if (preferReturn !== 'minimal') res.body = resource;
  return res;
}

/** Ids matching a conditional query; throws 412 when more than one matches. */
export function conditionalMatch(ctx: FhirContext, type: string, query: string): string | undefined {
  const ids = ctx.store.matchIds(type, query, 2);
  if (ids.length > 1) throw new HospitalApiError('ERR_FHIR_MULTIPLE_MATCHES', { query, count: 'several' });
  return ids[0];
}

export function create(ctx: FhirContext, type: string, req: FhirRequest): FhirResponse {
  const resource = checkBody(type, req.body);
  return ctx.store.transaction(() => {
    if (req.ifNoneExist) {
      const existing = conditionalMatch(ctx, type, req.ifNoneExist);
      if (existing) {
        const current = ctx.store.read(type, existing);
        if (current && !current.deleted) return written(ctx, current.resource, 200, req.preferReturn);
      }
    }
    return written(ctx, ctx.store.create(resource).resource, 201, req.preferReturn);
  });
}

export function update(ctx: FhirContext, type: string, id: string, req: FhirRequest): FhirResponse {
  const resource = checkBody(type, req.body);
  if (!ID.test(id)) throw new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `"${id}" is not a valid id` });
  if (resource.id === undefined) throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: 'an update needs the id in the body' });
  if (resource.id !== id) throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: `body id "${resource.id}" does not match the URL id "${id}"` });
  const options = req.ifMatch ? { ifMatchVersion: versionFromEtag(req.ifMatch) } : {};
  const result = ctx.store.update(resource, options);
  return written(ctx, result.resource, result.created ? 201 : 200, req.preferReturn);
}

export function conditionalUpdate(ctx: FhirContext, type: string, query: string, req: FhirRequest): FhirResponse {
  const resource = checkBody(type, req.body);
  return ctx.store.transaction(() => {
    const match = conditionalMatch(ctx, type, query);
    if (match) {
      if (resource.id !== undefined && resource.id !== match) {
        throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: `body id "${resource.id}" differs from the matching ${type}/${match}` });
      }
      return update(ctx, type, match, { ...req, body: { ...resource, id: match } });
    }
    if (resource.id !== undefined) return update(ctx, type, resource.id, req);
    return written(ctx, ctx.store.create(resource).resource, 201, req.preferReturn);
  });
}

export function patch(ctx: FhirContext, type: string, id: string, req: FhirRequest): FhirResponse {
  return ctx.store.transaction(() => {
    const current = ctx.store.read(type, id);
    if (!current) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type, id });
    if (current.deleted) throw new HospitalApiError('ERR_FHIR_RESOURCE_GONE', { type, id });
    const patched = applyJsonPatch(current.resource, req.body);
    if (patched.resourceType !== type || patched.id !== id) {
      throw new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: 'a patch may not change resourceType or id' });
    }
    const ifMatchVersion = req.ifMatch ? versionFromEtag(req.ifMatch) : current.versionId;
    const result = ctx.store.update(patched, { ifMatchVersion });
    return written(ctx, result.resource, 200, req.preferReturn);
  });
}

export function remove(ctx: FhirContext, type: string, id: string): FhirResponse {
  const current = ctx.store.read(type, id);
  if (!current) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type, id });
  ctx.store.delete(type, id);
  return { status: 200, body: outcome(200, `${type}/${id} deleted`) };
}

export function conditionalRemove(ctx: FhirContext, type: string, query: string): FhirResponse {
  return ctx.store.transaction(() => {
    const match = conditionalMatch(ctx, type, query);
    if (match) ctx.store.delete(type, match);
    return { status: 200, body: outcome(200, match ? `${type}/${match} deleted` : 'nothing matched, nothing deleted') };
  });
}

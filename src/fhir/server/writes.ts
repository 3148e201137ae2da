/**
 * create / update / patch / delete and their conditional forms (http://hl7.org/fhir/R4/http.html):
 * conditional create 0 → 201, 1 → 200 (no write), >1 → 412; conditional update
 * 0 → create, 1 → update (400 if the body id differs), >1 → 412; conditional
 * delete 0 or 1 → 200, >1 → 412; If-Match mismatch → 412.
 */
import { HospitalApiError } from '../../errors/index.js';
import { matchIds } from '../search/match-ids.js';
import type { Resource } from '../store/types.js';
import { etagOf, httpDate, versionFromEtag, type FhirContext, type FhirRequest, type FhirResponse } from './context.js';
import { isR4Id } from '../validation/ids.js';
import { checkResource } from '../validation/validate.js';
import { checkReferences } from './integrity.js';
import { applyJsonPatch } from './json-patch.js';
import { outcome } from './outcome.js';

/** An id or version id in the URL is R4's id form (validation/ids.ts), else 400 before the store is asked. */
export function checkId(id: string): void {
  if (!isR4Id(id)) throw new HospitalApiError('ERR_FHIR_INVALID_ID', { id: id.slice(0, 80) });
}

/** The body is a resource of the URL's type, valid against R4 when the policy says so (400 naming each failing path). */
export function checkBody(ctx: FhirContext, type: string, body: unknown): Resource {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: 'the body must be a JSON resource' });
  }
  const r = body as Resource;
  if (r.resourceType !== type) {
    throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: `resourceType "${String(r.resourceType)}" does not match the URL type ${type}` });
  }
  if (ctx.policy.validate) checkResource(r, ctx.entry);
  return r;
}

/** Stores, then checks references (or queues the check, in a transaction) inside the same transaction (a failure rolls the write back). */
export function storeChecked(ctx: FhirContext, write: () => ReturnType<FhirContext['store']['update']>): ReturnType<FhirContext['store']['update']> {
  return ctx.store.transaction(() => {
    const result = write();
    if (ctx.deferredReferenceChecks) ctx.deferredReferenceChecks.push({ resource: result.resource, where: ctx.entry ?? '' });
    else checkReferences(ctx, result.resource, ctx.entry);
    return result;
  });
}

/**
 * The query of a conditional create/update/delete: the bare query (`identifier=S|1`), `?query`, or
 * `Type?query` (HAPI accepts that form too), also as an absolute URL; the type must be the target's.
 */
export function conditionQuery(type: string, raw: string): string {
  const q = raw.indexOf('?');
  if (q < 0) return raw;
  const head = raw.slice(0, q);
  const named = head.slice(head.lastIndexOf('/') + 1);
  if (named !== '' && named !== type) {
    throw new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `the condition "${raw.slice(0, 200)}" names ${named}, not ${type}` });
  }
  return raw.slice(q + 1);
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
  const ids = matchIds(ctx.store, type, query, 2);
  if (ids.length > 1) throw new HospitalApiError('ERR_FHIR_MULTIPLE_MATCHES', { query, count: 'several' });
  return ids[0];
}

export function create(ctx: FhirContext, type: string, req: FhirRequest): FhirResponse {
  const resource = checkBody(ctx, type, req.body);
  return ctx.store.transaction(() => {
    if (req.ifNoneExist) {
      const existing = conditionalMatch(ctx, type, conditionQuery(type, req.ifNoneExist));
      if (existing) {
        const current = ctx.store.read(type, existing);
        if (current && !current.deleted) return written(ctx, current.resource, 200, req.preferReturn);
      }
    }
    return written(ctx, storeChecked(ctx, () => ctx.store.create(resource)).resource, 201, req.preferReturn);
  });
}

export function update(ctx: FhirContext, type: string, id: string, req: FhirRequest): FhirResponse {
  checkId(id);
  const resource = checkBody(ctx, type, req.body);
  if (resource.id === undefined) throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: 'an update needs the id in the body' });
  if (resource.id !== id) throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: `body id "${resource.id}" does not match the URL id "${id}"` });
  const options = req.ifMatch ? { ifMatchVersion: versionFromEtag(req.ifMatch) } : {};
  const result = storeChecked(ctx, () => ctx.store.update(resource, options));
  return written(ctx, result.resource, result.created ? 201 : 200, req.preferReturn);
}

export function conditionalUpdate(ctx: FhirContext, type: string, query: string, req: FhirRequest): FhirResponse {
  const resource = checkBody(ctx, type, req.body);
  return ctx.store.transaction(() => {
    const match = conditionalMatch(ctx, type, query);
    if (match) {
      if (resource.id !== undefined && resource.id !== match) {
        throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: `body id "${resource.id}" differs from the matching ${type}/${match}` });
      }
      return update(ctx, type, match, { ...req, body: { ...resource, id: match } });
    }
    if (resource.id !== undefined) return update(ctx, type, resource.id, req);
    return written(ctx, storeChecked(ctx, () => ctx.store.create(resource)).resource, 201, req.preferReturn);
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
    checkBody(ctx, type, patched);
    const ifMatchVersion = req.ifMatch ? versionFromEtag(req.ifMatch) : current.versionId;
    const result = storeChecked(ctx, () => ctx.store.update(patched, { ifMatchVersion }));
    return written(ctx, result.resource, 200, req.preferReturn);
  });
}

/**
 * R4 http.html#delete: "Upon successful deletion, or if the resource does not exist at all, the server
 * should return either a 200 OK … or a 204 No Content": 200 with an OperationOutcome saying which.
 */
export function remove(ctx: FhirContext, type: string, id: string): FhirResponse {
  checkId(id);
  const deleted = ctx.store.delete(type, id);
  return { status: 200, body: outcome(200, deleted ? `${type}/${id} deleted` : `${type}/${id} does not exist (or was already deleted): nothing to delete`) };
}

export function conditionalRemove(ctx: FhirContext, type: string, query: string): FhirResponse {
  return ctx.store.transaction(() => {
    const match = conditionalMatch(ctx, type, query);
    if (match) ctx.store.delete(type, match);
    return { status: 200, body: outcome(200, match ? `${type}/${match} deleted` : 'nothing matched, nothing deleted') };
  });
}

/**
 * The FHIR REST router, independent of HTTP: the Fastify app and Bundle
 * entries both come through `dispatch`, so a transaction entry behaves exactly
 * like the same request sent alone.
 */
import { HospitalApiError } from '../../errors/index.js';
import { pageLink, searchsetBundle } from './bundle.js';
import { capabilityStatement } from './capability.js';
import { etagOf, httpDate, type FhirContext, type FhirRequest, type FhirResponse } from './context.js';
import { isResourceType } from './resource-types.js';
import { conditionalRemove, conditionalUpdate, create, patch, remove, update } from './writes.js';

function notAllowed(req: FhirRequest): never {
  throw new HospitalApiError('ERR_FHIR_METHOD_NOT_ALLOWED', { method: req.method, path: `/${req.segments.join('/')}` });
}

function checkType(type: string): void {
  if (!isResourceType(type)) throw new HospitalApiError('ERR_FHIR_UNKNOWN_TYPE', { type });
}

/** The query as a string for conditional operations (`identifier=S%7C1&…`). */
function queryString(params: Array<[string, string]>): string {
  return new URLSearchParams(params.filter(([k]) => k !== '_format' && k !== '_pretty')).toString();
}

function filters(params: Array<[string, string]>): Array<[string, string]> {
  return params.filter(([k]) => k !== '_format' && k !== '_pretty');
}

export function dispatch(ctx: FhirContext, req: FhirRequest): FhirResponse {
  const [type, id, op, vid, ...rest] = req.segments;
  const m = req.method;
  if (rest.length > 0) notAllowed(req);
  if (type === undefined) notAllowed(req); // POST [base] (Bundles) is handled by the caller
  if (type === 'metadata' && id === undefined) {
    if (m !== 'GET') notAllowed(req);
    return { status: 200, body: capabilityStatement(ctx.base) };
  }
  checkType(type);
  if (id === undefined) {
    if (m === 'GET') return search(ctx, type, req.params);
    if (m === 'POST') return create(ctx, type, req);
    const query = queryString(req.params);
    if (m === 'PUT' && filters(req.params).length) return conditionalUpdate(ctx, type, query, req);
    if (m === 'DELETE' && filters(req.params).length) return conditionalRemove(ctx, type, query);
    notAllowed(req);
  }
  if (id === '_search' && op === undefined && m === 'POST') return search(ctx, type, req.params);
  if (op === undefined) {
    if (m === 'GET') return read(ctx, type, id);
    if (m === 'PUT') return update(ctx, type, id, req);
    if (m === 'PATCH') return patch(ctx, type, id, req);
    if (m === 'DELETE') return remove(ctx, type, id);
    notAllowed(req);
  }
  if (op === '_history' && m === 'GET') return vid === undefined ? history(ctx, type, id) : vread(ctx, type, id, vid);
  notAllowed(req);
}

export function read(ctx: FhirContext, type: string, id: string): FhirResponse {
  const r = ctx.store.read(type, id);
  if (!r) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type, id });
  if (r.deleted) throw new HospitalApiError('ERR_FHIR_RESOURCE_GONE', { type, id });
  return { status: 200, body: r.resource, etag: etagOf(r.versionId), lastModified: httpDate(r.lastUpdated) };
}

function vread(ctx: FhirContext, type: string, id: string, vid: string): FhirResponse {
  const h = ctx.store.vread(type, id, vid);
  if (!h) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type, id: `${id}/_history/${vid}` });
  if (h.deleted) throw new HospitalApiError('ERR_FHIR_RESOURCE_GONE', { type, id: `${id}/_history/${vid}` });
  return { status: 200, body: h.resource, etag: etagOf(h.versionId), lastModified: httpDate(h.lastUpdated) };
}

function history(ctx: FhirContext, type: string, id: string): FhirResponse {
  const versions = ctx.store.history(type, id);
  if (versions.length === 0) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type, id });
  return {
    status: 200,
    body: {
      resourceType: 'Bundle',
      type: 'history',
      total: versions.length,
      link: [{ relation: 'self', url: `${ctx.base}/${type}/${id}/_history` }],
      entry: versions.map((h) => ({
        fullUrl: `${ctx.base}/${type}/${id}`,
        ...(h.resource ? { resource: h.resource } : {}),
        request: { method: h.deleted ? 'DELETE' : h.versionId === '1' ? 'POST' : 'PUT', url: h.versionId === '1' ? type : `${type}/${id}` },
        response: { status: h.deleted ? '204 No Content' : h.versionId === '1' ? '201 Created' : '200 OK', etag: etagOf(h.versionId), lastModified: h.lastUpdated },
      })),
    },
  };
}

export function search(ctx: FhirContext, type: string, params: Array<[string, string]>): FhirResponse {
  const result = ctx.store.search({ resourceType: type, params });
  const cursor = params.find(([k]) => k === '_cursor')?.[1];
  const first = cursor === undefined;
  return {
    status: 200,
    body: searchsetBundle({
      base: ctx.base,
      matches: result.matches,
      included: result.included,
      selfUrl: pageLink(ctx.base, type, result.used, cursor),
      nextUrl: result.nextCursor ? pageLink(ctx.base, type, result.used, result.nextCursor) : null,
      // without a count query the total is known only when everything fit on the first page
      ...(result.total !== undefined ? { total: result.total } : first && !result.nextCursor ? { total: result.matches.length } : {}),
    }),
  };
}

/**
 * The FHIR REST router, independent of HTTP: the Fastify app and Bundle
 * entries both come through `dispatch`, so a transaction entry behaves exactly
 * like the same request sent alone. Operations are registered in OPERATIONS.
 */
import { HospitalApiError } from '../../errors/index.js';
import { everythingHandler } from '../everything/operation.js';
import { search as runSearch } from '../search/execute.js';
import { pageLink, searchsetBundle } from './bundle.js';
import { metadata } from './capability.js';
import { etagOf, httpDate, type FhirContext, type FhirRequest, type FhirResponse } from './context.js';
import { isResourceType } from './resource-types.js';
import { validateHandler } from './validate-operation.js';
import { checkId, conditionalRemove, conditionalUpdate, create, patch, remove, update } from './writes.js';

function notAllowed(req: FhirRequest): never {
  throw new HospitalApiError('ERR_FHIR_METHOD_NOT_ALLOWED', { method: req.method, path: `/${req.segments.join('/')}` });
}

/** An interaction or operation R4 defines that this server does not implement: 501 naming it (never 404). */
export function notSupported(interaction: string): never {
  throw new HospitalApiError('ERR_FHIR_NOT_SUPPORTED', { interaction });
}

function checkType(type: string): void {
  if (!isResourceType(type)) throw new HospitalApiError('ERR_FHIR_UNKNOWN_TYPE', { type });
}

/** The query as a string for conditional operations (`identifier=S%7C1&…`). */
function queryString(params: Array<[string, string]>): string {
  return new URLSearchParams(filters(params)).toString();
}

function filters(params: Array<[string, string]>): Array<[string, string]> {
  return params.filter(([k]) => k !== '_format' && k !== '_pretty');
}

const isOperation = (segment: string | undefined): segment is string => segment !== undefined && segment.startsWith('$');

/** An operation this server serves: where (`[type]/$name`, `[type]/[id]/$name`), the methods it takes, its handler. */
interface Operation {
  /** A resource type, or '*' for every type. */
  type: string;
  name: string;
  levels: ReadonlyArray<'type' | 'instance'>;
  methods: readonly string[];
  handler: (ctx: FhirContext, req: FhirRequest) => FhirResponse;
}

/**
 * The operations this server implements (the CapabilityStatement names the same). Served to requests sent
 * alone: a Bundle entry naming one is refused by `unsupported` (405), as is a method the operation does not take.
 */
const OPERATIONS: readonly Operation[] = [
  { type: 'Patient', name: '$everything', levels: ['instance'], methods: ['GET', 'POST'], handler: everythingHandler },
  // R4 resource-operation-validate.html: type and instance level; POST only here (its resource is a body)
  { type: '*', name: '$validate', levels: ['type', 'instance'], methods: ['POST'], handler: validateHandler },
];

function operationAt(type: string, name: string, level: 'type' | 'instance'): Operation | undefined {
  return OPERATIONS.find((o) => (o.type === type || o.type === '*') && o.name === name && o.levels.includes(level));
}

/**
 * Requests R4 defines (http.html, operations) that are not implemented here, by their shape; checked
 * before the type so that `/$export` or `/ValueSet/$expand` never reads as an unknown type or id.
 */
export function unsupported(req: FhirRequest): void {
  const [type, id, op, vid, ...rest] = req.segments;
  const m = req.method;
  if (type === undefined) {
    if (m === 'GET') notSupported('system-level search (GET [base])');
    return;
  }
  if (isOperation(type)) notSupported(`system-level operation ${type}`);
  if (type === '_history') notSupported('system-level history (GET [base]/_history)');
  if (type === '_search') notSupported('system-level search (POST [base]/_search)');
  if (type === 'metadata') return;
  if (id === '_history') notSupported(`type-level history (GET [base]/${type}/_history)`);
  if (isOperation(id) && op === undefined && operationAt(type, id, 'type')) notAllowed(req); // served by dispatch for its methods only
  if (isOperation(id)) notSupported(`operation ${type}/${id}${type === 'Patient' && id === '$everything' ? ' at type level (use Patient/[id]/$everything)' : ''}`);
  if (isOperation(op) && vid === undefined && operationAt(type, op, 'instance')) notAllowed(req); // served by dispatch for its methods only
  if (isOperation(op)) notSupported(`operation ${type}/[id]/${op}`);
  if (op !== undefined && op !== '_history') {
    notSupported(isResourceType(op) ? `compartment search (GET [base]/${type}/[id]/${op})` : `[base]/${type}/[id]/${op}`);
  }
  if (isOperation(rest[0] ?? vid)) notSupported(`operation on a version (${rest[0] ?? vid})`);
  if (m === 'PATCH' && id === undefined && filters(req.params).length) notSupported('conditional patch (PATCH [base]/[type]?[query])');
  if (m === 'HEAD') notSupported('HEAD');
}

export function dispatch(ctx: FhirContext, req: FhirRequest): FhirResponse {
  const [type, id, op, vid, ...rest] = req.segments;
  const operation =
    type === undefined || id === undefined ? undefined
    : isOperation(id) && op === undefined ? operationAt(type, id, 'type')
    : isOperation(op) && vid === undefined ? operationAt(type, op, 'instance')
    : undefined;
  if (operation?.methods.includes(req.method)) return operation.handler(ctx, req);
  unsupported(req);
  const m = req.method;
  if (rest.length > 0) notAllowed(req);
  if (type === undefined) notAllowed(req); // POST [base] (Bundles) is handled by the caller
  if (type === 'metadata' && id === undefined) {
    if (m !== 'GET') notAllowed(req);
    return metadata(ctx.base);
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
  checkId(id);
  if (op === undefined) {
    if (m === 'GET') return read(ctx, type, id);
    if (m === 'PUT') return update(ctx, type, id, req);
    if (m === 'PATCH') return patch(ctx, type, id, req);
    if (m === 'DELETE') return remove(ctx, type, id);
    notAllowed(req);
  }
  if (op === '_history' && m === 'GET') {
    if (vid === undefined) return history(ctx, type, id, req.params);
    checkId(vid);
    return vread(ctx, type, id, vid);
  }
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

export const HISTORY_DEFAULT_COUNT = 100;
export const HISTORY_MAX_COUNT = 1000;

/** Instance history, newest first, paged: `_count` (default 100, at most 1000) and an opaque `_before` version cursor. */
function history(ctx: FhirContext, type: string, id: string, params: Array<[string, string]>): FhirResponse {
  let count = HISTORY_DEFAULT_COUNT;
  let before: number | undefined;
  for (const [k, v] of params) {
    if (k === '_count') {
      if (!/^\d{1,6}$/.test(v) || Number(v) < 1) throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name: '_count', detail: 'must be a positive integer' });
      count = Math.min(Number(v), HISTORY_MAX_COUNT);
    } else if (k === '_before') {
      if (!/^\d{1,12}$/.test(v)) throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name: '_before', detail: 'not a cursor this server made' });
      before = Number(v);
    } else if (k === '_since' || k === '_at') {
      notSupported(`history parameter ${k}`);
    }
  }
  const page = ctx.store.historyPage(type, id, { limit: count, ...(before !== undefined ? { beforeVersion: before } : {}) });
  if (!page) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type, id });
  const self = `${ctx.base}/${type}/${id}/_history?_count=${count}${before !== undefined ? `&_before=${before}` : ''}`;
  const link = [{ relation: 'self', url: self }];
  if (page.nextBefore !== null) link.push({ relation: 'next', url: `${ctx.base}/${type}/${id}/_history?_count=${count}&_before=${page.nextBefore}` });
  return {
    status: 200,
    body: {
      resourceType: 'Bundle',
      type: 'history',
      total: page.total,
      link,
      entry: page.versions.map((h) => ({
        fullUrl: `${ctx.base}/${type}/${id}`,
        ...(h.resource ? { resource: h.resource } : {}),
        request: { method: h.deleted ? 'DELETE' : h.versionId === '1' ? 'POST' : 'PUT', url: h.versionId === '1' ? type : `${type}/${id}` },
        response: { status: h.deleted ? '204 No Content' : h.versionId === '1' ? '201 Created' : '200 OK', etag: etagOf(h.versionId), lastModified: h.lastUpdated },
      })),
    },
  };
}

export function search(ctx: FhirContext, type: string, params: Array<[string, string]>): FhirResponse {
  const result = runSearch(ctx.store, { resourceType: type, params });
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

/**
 * `POST [base]` with a transaction or batch Bundle (http://hl7.org/fhir/R4/http.html#transaction).
 * Transaction: ids are settled first (urn:uuid → new id, ifNoneExist → existing id,
 * conditional PUT → matched id), references rewritten (urn:uuid and conditional
 * `Type?query` references, which must match exactly one), then entries run in the
 * order DELETE, POST, PUT/PATCH, GET inside ONE SQLite transaction; any failure
 * rolls everything back. Responses come in request order. Batch: entries are
 * independent, each in its own savepoint, failures reported per entry.
 *
 * A large Bundle does not hold the event loop (issue 24): the checks and R4 validation of every entry run
 * before the SQLite transaction opens, in stretches of at most SLICE_MS with a turn of the event loop
 * between them (time-slice.ts); a batch commits and yields between stretches of entries (its entries are
 * independent, R4 http.html#transaction). The transaction's writes stay one SQLite transaction (atomic).
 */
import { HospitalApiError, toHospitalApiError } from '../../errors/index.js';
import { matchIds } from '../search/match-ids.js';
import { newResourceId } from '../store/new-id.js';
import type { Resource } from '../store/types.js';
import type { FhirContext, FhirRequest, FhirResponse } from './context.js';
import { dispatch, unsupported } from './dispatch.js';
import { checkResource, invalidResource } from '../validation/validate.js';
import { checkReferences } from './integrity.js';
import { errorOutcome, outcome } from './outcome.js';
import { isResourceType } from './resource-types.js';
import { drain, sliced, timeSlicer, withDeadline, type Tick } from './time-slice.js';
import { checkBody, conditionalMatch, conditionQuery, storeChecked, written } from './writes.js';
import { parseQueryString } from '../search/query-string.js';

interface Entry {
  fullUrl?: string;
  resource?: Resource;
  request?: { method?: string; url?: string; ifNoneExist?: string; ifMatch?: string };
}

interface Parsed {
  index: number;
  method: string;
  segments: string[];
  params: Array<[string, string]>;
  entry: Entry;
  /** Set when the entry is settled without a write (ifNoneExist matched). */
  existing?: string;
  /** A conditional DELETE that matched nothing: success, nothing to do. */
  noop?: boolean;
  /** A conditional PUT/DELETE, settled to the id in `segments`. */
  conditional?: boolean;
  /** Its resource was validated before anything was written. */
  validated?: boolean;
}

/** From this many entries a transaction's writes run in stretches on a connection of their own (store.bulkTransaction). */
export const SLICED_WRITES = 1000;

/** From this many resources to validate a transaction's validation runs on the validation thread (below, the round trip is not worth it). */
export const THREAD_VALIDATION_ENTRIES = 10;

const ORDER: Record<string, number> = { DELETE: 0, POST: 1, PUT: 2, PATCH: 2, GET: 3, HEAD: 3 };
const STATUS_TEXT: Record<number, string> = { 200: '200 OK', 201: '201 Created', 204: '204 No Content' };

function invalid(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail });
}

function parseEntry(entry: Entry, index: number): Parsed {
  const method = entry?.request?.method?.toUpperCase();
  const url = entry?.request?.url;
  if (!method || !(method in ORDER) || typeof url !== 'string' || url === '') throw invalid(`entry ${index} needs request.method and request.url`);
  if ((method === 'POST' || method === 'PUT') && (!entry.resource || typeof entry.resource !== 'object')) throw invalid(`entry ${index} (${method}) needs a resource`);
  const rel = url.replace(/^[a-z]+:\/\/[^/]+\/(?:[^?]*?\/)?(?=[A-Z][A-Za-z]+(?:[/?]|$))/, '').replace(/^\//, '');
  const [path, query = ''] = rel.split('?', 2) as [string, string?];
  return { index, method, segments: path.split('/').filter(Boolean), params: parseQueryString(query, false), entry };
}

/**
 * The rules the same request sent alone would meet (R4 http.html#transaction: each entry is processed
 * as if sent alone): a known type, an interaction this server supports on that path, and a resource
 * of request.url's type. Throws naming the interaction; the caller names the entry.
 */
function checkEntry(p: Parsed): void {
  const req: FhirRequest = { method: p.method, segments: p.segments, params: p.params };
  unsupported(req);
  const [type, id, op] = p.segments;
  if (type === 'metadata' && id === undefined && p.method === 'GET') return;
  if (!type || !isResourceType(type)) throw new HospitalApiError('ERR_FHIR_UNKNOWN_TYPE', { type: type ?? '' });
  const conditional = id === undefined && p.params.some(([k]) => k !== '_format' && k !== '_pretty');
  const shapeOk =
    p.method === 'POST' ? id === undefined || (id === '_search' && op === undefined)
    : p.method === 'PUT' || p.method === 'DELETE' ? (id !== undefined && op === undefined) || conditional
    : p.method === 'PATCH' ? id !== undefined && op === undefined
    : true;
  if (!shapeOk) throw new HospitalApiError('ERR_FHIR_METHOD_NOT_ALLOWED', { method: p.method, path: `/${p.segments.join('/')}` });
  if ((p.method === 'POST' && id === undefined) || p.method === 'PUT') {
    const rt = (p.entry.resource as { resourceType?: unknown } | undefined)?.resourceType;
    if (rt !== type) throw new HospitalApiError('ERR_FHIR_INVALID_RESOURCE', { detail: `resourceType "${String(rt)}" does not match request.url's type ${type}` });
  }
}

/** In a Bundle an unsupported interaction is the client's error for that entry: 400 (501 alone). */
function entryError(err: unknown): ReturnType<typeof errorOutcome> {
  const [status, oo, e] = errorOutcome(err);
  return status === 501 ? [400, oo, e] : [status, oo, e];
}

function responseEntry(res: FhirResponse, preferReturn: string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {
    response: {
      status: STATUS_TEXT[res.status] ?? String(res.status),
      ...(res.location ? { location: res.location } : {}),
      ...(res.etag ? { etag: res.etag } : {}),
      ...(res.lastModified ? { lastModified: new Date(res.lastModified).toISOString() } : {}),
    },
  };
  const body = res.body ?? (res.raw ? (JSON.parse(res.raw.toString('utf8')) as unknown) : undefined);
  if (body !== undefined && (preferReturn === 'representation' || !res.location)) out.resource = body;
  return out;
}

/**
 * Replaces, in place (the Bundle was parsed for this request alone), every string equal to a
 * mapped urn:uuid, and resolves conditional references.
 */
function rewrite(ctx: FhirContext, node: unknown, ids: Map<string, string>): void {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const v: unknown = node[i];
      if (typeof v === 'string') node[i] = ids.get(v) ?? v;
      else if (v && typeof v === 'object') rewrite(ctx, v, ids);
    }
    return;
  }
  const obj = node as Record<string, unknown>;
  for (const k in obj) {
    const v = obj[k];
    if (typeof v === 'string') {
      if (k === 'reference' && /^[A-Z][A-Za-z]+\?/.test(v)) obj[k] = resolveConditional(ctx, v, ids);
      else {
        const mapped = ids.get(v);
        if (mapped !== undefined) obj[k] = mapped;
      }
    } else if (v && typeof v === 'object') rewrite(ctx, v, ids);
  }
}

/** `Type?query` → `Type/id`; exactly one match or the transaction fails. Resolved once per transaction. */
function resolveConditional(ctx: FhirContext, ref: string, ids: Map<string, string>): string {
  let resolved = ids.get(ref);
  if (resolved === undefined) {
    const [type, query] = ref.split('?', 2) as [string, string];
    const found = matchIds(ctx.store, type, query, 2);
    if (found.length !== 1) throw new HospitalApiError('ERR_FHIR_MULTIPLE_MATCHES', { query: ref, count: found.length });
    resolved = `${type}/${found[0]}`;
    ids.set(ref, resolved);
  }
  return resolved;
}

/** A PATCH entry carries its JSON Patch as a Binary (base64 data), as R4 transactions do. */
function patchBody(resource: unknown): unknown {
  const r = resource as { resourceType?: string; data?: string } | undefined;
  if (r?.resourceType === 'Binary' && typeof r.data === 'string') {
    try {
      return JSON.parse(Buffer.from(r.data, 'base64').toString('utf8')) as unknown;
    } catch {
      throw invalid('the PATCH entry Binary does not hold a JSON Patch');
    }
  }
  return resource;
}

/**
 * The response Bundle, serialized entry by entry with the event loop's turns between stretches: one
 * JSON.stringify of 20,000 response entries would be a block of its own (issue 24).
 */
async function responseBundle(type: 'transaction-response' | 'batch-response', entries: Array<Record<string, unknown>>, tick: Tick): Promise<FhirResponse> {
  const parts: string[] = new Array(entries.length);
  for (let i = 0; i < entries.length; i++) {
    parts[i] = JSON.stringify(entries[i]);
    const turn = tick();
    if (turn) await turn;
  }
  return { status: 200, raw: Buffer.from(`{"resourceType":"Bundle","type":"${type}","entry":[${parts.join(',')}]}`) };
}

export async function processBundle(ctx: FhirContext, bundle: unknown, preferReturn?: string): Promise<FhirResponse> {
  const b = bundle as { resourceType?: string; type?: string; entry?: Entry[] };
  if (!b || b.resourceType !== 'Bundle') throw invalid('POST to the base takes a Bundle');
  if (b.type !== 'transaction' && b.type !== 'batch') throw invalid(`Bundle.type must be transaction or batch, not "${String(b.type)}"`);
  const entries = Array.isArray(b.entry) ? b.entry : [];
  return b.type === 'batch' ? batch(ctx, entries, preferReturn) : transaction(ctx, entries, preferReturn);
}

function toRequest(p: Parsed, resource: Resource | undefined, preferReturn: string | undefined): FhirRequest {
  const req: FhirRequest = { method: p.method, segments: p.segments, params: p.params, body: resource };
  if (p.entry.request?.ifMatch) req.ifMatch = p.entry.request.ifMatch;
  if (preferReturn) req.preferReturn = preferReturn;
  return req;
}

async function batch(ctx: FhirContext, entries: Entry[], preferReturn?: string): Promise<FhirResponse> {
  const out: Array<Record<string, unknown>> = new Array(entries.length);
  const tick = timeSlicer();
  let i = 0;
  // the only writer until its last entry (its stretches commit on the store's connection, between them other
  // writes wait and reads go on)
  await ctx.store.exclusive(async () => {
    while (i < entries.length) {
      // one SQLite transaction per stretch (one COMMIT for many entries), committed before the event loop's turn
      let turn: Promise<void> | undefined;
      ctx.store.transaction(() => {
        do {
          out[i] = batchEntry(ctx, entries[i] as Entry, i, preferReturn);
          i++;
          turn = i < entries.length ? tick() : undefined;
        } while (i < entries.length && !turn);
      });
      if (turn) await turn;
    }
  });
  return responseBundle('batch-response', out, tick);
}

function batchEntry(ctx: FhirContext, entry: Entry, i: number, preferReturn?: string): Record<string, unknown> {
  try {
    const p = parseEntry(entry, i);
    checkEntry(p);
    const req = toRequest(p, (p.method === 'PATCH' ? patchBody(entry.resource) : entry.resource) as Resource | undefined, preferReturn);
    if (entry.request?.ifNoneExist) req.ifNoneExist = entry.request.ifNoneExist;
    const entryCtx: FhirContext = { ...ctx, entry: `Bundle.entry[${i}]` };
    return responseEntry(ctx.store.transaction(() => dispatch(entryCtx, req)), preferReturn);
  } catch (err) {
    const [status, oo] = entryError(err);
    const issue = oo.issue[0];
    if (issue) issue.expression = [`Bundle.entry[${i}]`];
    return { response: { status: String(status), outcome: oo } };
  }
}

async function transaction(ctx: FhirContext, entries: Entry[], preferReturn?: string): Promise<FhirResponse> {
  let current = -1;
  const deferred: NonNullable<FhirContext['deferredReferenceChecks']> = [];
  const tick = timeSlicer();
  // the checks and the writes stop at the deadline (rolled back); the answer, once committed, is not cut
  const bounded = withDeadline(tick, ctx.deadline);
  try {
    // 1. check each entry as if sent alone, its resource validated, before any lookup or write: the first
    // invalid entry refuses the whole Bundle at once (20,000 invalid entries cost one validation). Nothing
    // here reads or writes the store, so it runs before the SQLite transaction, giving the event loop a turn
    // between stretches (a 20,000-entry Bundle validates in seconds; other callers are answered meanwhile).
    const parsed: Parsed[] = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) {
      current = i;
      parsed[i] = parseEntry(entries[i] as Entry, i);
      const turn = bounded();
      if (turn) await turn;
    }
    // The entries' checks in order; the resources of those before the first refused entry are validated (on the
    // validation thread when there is one, else here), and the lowest refused index wins, as if each entry were
    // checked and validated in turn.
    let refused: { index: number; error: unknown } | undefined;
    const toValidate: number[] = [];
    for (const p of parsed) {
      try {
        checkEntry(p);
      } catch (error) {
        refused = { index: p.index, error };
        break;
      }
      if (ctx.policy.validate && ((p.method === 'POST' && p.segments[1] === undefined) || p.method === 'PUT')) toValidate.push(p.index);
      const turn = bounded();
      if (turn) await turn;
    }
    const finding = ctx.validateEntries && toValidate.length >= THREAD_VALIDATION_ENTRIES ? await ctx.validateEntries(toValidate) : undefined;
    if (finding) {
      current = finding.index;
      throw invalidResource(finding.issues, `Bundle.entry[${finding.index}]`);
    }
    if (finding === undefined) {
      for (const index of toValidate) {
        current = index;
        checkResource(parsed[index]!.entry.resource, `Bundle.entry[${index}]`, { conditionalReferences: true });
        const turn = bounded();
        if (turn) await turn;
      }
    }
    for (const index of toValidate) parsed[index]!.validated = true;
    if (refused) {
      current = refused.index;
      throw refused.error;
    }
    // 2.-4. in ONE SQLite transaction. A large Bundle works through it in stretches on a connection of its own
    // (store.bulkTransaction: reads elsewhere see only committed rows meanwhile, other writes wait); a small one
    // runs it in one go on the store's connection.
    const writes = function* (ctx: FhirContext): Generator<void, Array<Record<string, unknown>>> {
      const txCtx: FhirContext = { ...ctx, deferredReferenceChecks: deferred };
      const ids = new Map<string, string>();
      const targets = new Set<string>();
      // 2. settle identities before anything is written
      for (const p of parsed) {
        current = p.index;
        const [type, id] = p.segments as [string, string | undefined];
        let target: string | undefined;
        if (p.method === 'POST' && id === undefined) {
          const cond = p.entry.request?.ifNoneExist;
          p.existing = cond ? conditionalMatch(ctx, type, conditionQuery(type, cond)) : undefined;
          target = `${type}/${p.existing ?? newResourceId()}`;
          p.segments = [type, target.slice(type.length + 1)];
        } else if ((p.method === 'PUT' || p.method === 'DELETE') && id === undefined && p.params.length) {
          const q = new URLSearchParams(p.params).toString();
          const match = conditionalMatch(ctx, type, q);
          if (p.method === 'DELETE' && match === undefined) {
            p.noop = true; // R4: a conditional delete matching nothing succeeds with nothing to do
            continue;
          }
          const bodyId = p.entry.resource?.id;
          target = `${type}/${match ?? bodyId ?? newResourceId()}`;
          p.segments = [type, target.slice(type.length + 1)];
          p.params = [];
          p.conditional = true;
        } else if (p.method !== 'GET' && p.method !== 'HEAD' && id && id !== '_search') target = `${type}/${id}`;
        if (target) {
          if (targets.has(target)) throw invalid(`${target} appears in more than one entry`);
          targets.add(target);
        }
        if (target && p.entry.fullUrl) {
          ids.set(p.entry.fullUrl, target);
          // An absolute RESTful fullUrl ([base]/Type/id): relative references `Type/id` in the Bundle resolve
          // to it (R4 bundle.html, "Resolving references in Bundles"; HAPI matches them the same way).
          const restful = /^https?:\/\/[^?#]*\/([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})$/.exec(p.entry.fullUrl);
          if (restful && restful[1] === type) ids.set(`${restful[1]}/${restful[2]}`, target);
        }
        yield;
      }
      // 3. run in processing order, answer in request order
      const results: Array<Record<string, unknown>> = new Array(parsed.length);
      const order = [...parsed].sort((a, b) => (ORDER[a.method] as number) - (ORDER[b.method] as number) || a.index - b.index);
      for (const p of order) {
        current = p.index;
        if (p.noop) {
          results[p.index] = { response: { status: '200 OK', outcome: outcome(200, 'the condition matched nothing: nothing deleted') } };
          continue;
        }
        // an entry validated in step 1 is not validated again (rewriting its urn:uuid and conditional references
        // to Type/id keeps it valid); a PATCH is validated once applied
        const entryCtx: FhirContext = { ...txCtx, entry: `Bundle.entry[${p.index}]`, ...(p.validated ? { policy: { ...ctx.policy, validate: false } } : {}) };
        const resource = p.entry.resource && typeof p.entry.resource === 'object' ? p.entry.resource : undefined;
        if (resource && p.method !== 'GET' && p.method !== 'HEAD') rewrite(ctx, resource, ids);
        let res: FhirResponse;
        if (p.method === 'POST' && p.segments[1] !== '_search') {
          const [type, id] = p.segments as [string, string];
          const current = p.existing ? ctx.store.read(type, id) : undefined;
          if (current && !current.deleted) res = written(ctx, current.resource, 200, preferReturn);
          else {
            const body = checkBody(entryCtx, type, resource);
            const created = storeChecked(entryCtx, () => ctx.store.update({ ...body, id }));
            res = written(ctx, created.resource, 201, preferReturn);
          }
        } else {
          // a conditional PUT writes the id it was settled to; a plain PUT keeps its body (the id must match, as alone)
          const body = p.method === 'PUT' && p.conditional ? { ...(resource as Resource), id: p.segments[1] } : p.method === 'PATCH' ? patchBody(resource) : resource;
          res = dispatch(entryCtx, toRequest(p, body as Resource, preferReturn));
        }
        results[p.index] = responseEntry(res, preferReturn);
        yield;
      }
      // 4. referential integrity once every entry is written (entries may point at each other); nothing is
      // written meanwhile, so a target found once is not looked up again (the Bundle's entries share theirs)
      const known = new Set<string>();
      for (const d of deferred) {
        current = Number(/\[(\d+)\]/.exec(d.where)?.[1] ?? current);
        checkReferences(ctx, d.resource, d.where, known);
        yield;
      }
      return results;
    };
    let responses: Array<Record<string, unknown>>;
    if (parsed.length >= SLICED_WRITES) responses = await ctx.store.bulkTransaction((store) => sliced(writes({ ...ctx, store }), bounded));
    else {
      for (let g = ctx.store.writeGate(); g; g = ctx.store.writeGate()) await g;
      // a wait behind a large Bundle counts: past the deadline, nothing is written
      const turn = bounded();
      if (turn) await turn;
      responses = ctx.store.transaction(() => drain(writes(ctx)));
    }
    return await responseBundle('transaction-response', responses, tick);
  } catch (err) {
    const e = toHospitalApiError(err);
    const [status, oo] = entryError(e);
    const issue = oo.issue[0];
    if (issue) {
      issue.diagnostics = `Transaction failed at entry ${current}, nothing was applied: ${e.message}`;
      if (current >= 0) issue.expression = [`Bundle.entry[${current}]`];
    }
    return { status, body: oo };
  }
}

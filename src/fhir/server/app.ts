/**
 * The Fastify app: base `/fhir`, JSON only, every error an OperationOutcome.
 * HTTP concerns (negotiation, headers, base URL) live here; FHIR semantics in
 * dispatch.ts, writes.ts and transaction.ts.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';
import type { SqliteFhirStore } from '../store/sqlite-store.js';
import { publicBaseUrl, type BaseUrlOptions } from './base-url.js';
import type { FhirContext, FhirRequest, FhirResponse } from './context.js';
import { dispatch } from './dispatch.js';
import { checkAcceptable, FHIR_JSON } from './format.js';
import { errorOutcome, outcome } from './outcome.js';
import { processBundle } from './transaction.js';

export interface FhirAppOptions extends BaseUrlOptions {
  store: SqliteFhirStore;
  /** Largest accepted body (transaction Bundles can be big). */
  bodyLimit?: number;
}

const JSON_TYPES = ['application/json', 'application/fhir+json', 'application/json+fhir', 'application/json-patch+json'];

function parseJsonBody(_req: FastifyRequest, body: string, done: (err: Error | null, value?: unknown) => void): void {
  if (body.trim() === '') return done(null, undefined);
  try {
    done(null, JSON.parse(body));
  } catch (err) {
    done(new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `body is not JSON: ${(err as Error).message}` }));
  }
}

function everythingUnavailable(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_FHIR_OPERATION_UNAVAILABLE', { operation: '$everything', detail });
}

/** `Patient/{id}/$everything` is served by src/fhir/everything (another module), loaded on first use. */
async function everything(ctx: FhirContext, patientId: string, params: Array<[string, string]>, body: unknown): Promise<FhirResponse> {
  let mod: { everythingOperation?: (c: unknown) => Promise<unknown> };
  try {
    mod = (await import('../everything/operation.js')) as typeof mod;
  } catch {
    throw everythingUnavailable('the module is not installed');
  }
  if (typeof mod.everythingOperation !== 'function') throw everythingUnavailable('the module exports no everythingOperation');
  const bundle = await mod.everythingOperation({ store: ctx.store, patientId, params, body, publicBase: ctx.base });
  return { status: 200, body: bundle };
}

function send(reply: FastifyReply, res: FhirResponse): FastifyReply {
  reply.code(res.status).header('content-type', FHIR_JSON);
  if (res.etag) reply.header('etag', res.etag);
  if (res.lastModified) reply.header('last-modified', res.lastModified);
  if (res.location) reply.header('location', res.location).header('content-location', res.location);
  return reply.send(res.body === undefined ? '' : JSON.stringify(res.body));
}

export function buildFhirApp(options: FhirAppOptions): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: options.bodyLimit ?? 256 * 1024 * 1024, exposeHeadRoutes: false });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_TYPES, { parseAs: 'string' }, parseJsonBody);
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_r, body, done) => done(null, String(body)));
  app.addContentTypeParser('*', (req, _payload, done) => {
    done(new HospitalApiError('ERR_FHIR_UNSUPPORTED_MEDIA_TYPE', { type: String(req.headers['content-type'] ?? 'none').slice(0, 60) }));
  });

  app.setErrorHandler((err, _req, reply) => {
    const [status, oo] = errorOutcome(err);
    return send(reply, { status, body: oo });
  });
  app.setNotFoundHandler((req, reply) => send(reply, { status: 404, body: outcome(404, `No FHIR endpoint at ${req.url.split('?')[0]}`) }));

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    checkAcceptable(request);
    const ctx: FhirContext = { store: options.store, base: publicBaseUrl(request, options) };
    const raw = request.raw.url ?? '/fhir';
    const qIndex = raw.indexOf('?');
    const path = qIndex < 0 ? raw : raw.slice(0, qIndex);
    const params: Array<[string, string]> = qIndex < 0 ? [] : [...new URLSearchParams(raw.slice(qIndex + 1))];
    const segments = path.slice('/fhir'.length).split('/').filter(Boolean).map(decodeURIComponent);
    const method = request.method.toUpperCase();
    let body = request.body;
    if (typeof body === 'string') {
      // POST [type]/_search: the form body carries the parameters
      params.push(...new URLSearchParams(body));
      body = undefined;
    }
    const prefer = /return=(minimal|representation|OperationOutcome)/.exec(String(request.headers.prefer ?? ''))?.[1];
    if (segments.length === 0) {
      if (method !== 'POST') throw new HospitalApiError('ERR_FHIR_METHOD_NOT_ALLOWED', { method, path: '/fhir' });
      return send(reply, processBundle(ctx, body, prefer));
    }
    if (segments[0] === 'Patient' && segments[2] === '$everything' && segments.length === 3 && (method === 'GET' || method === 'POST')) {
      return send(reply, await everything(ctx, segments[1] as string, params, body));
    }
    const req: FhirRequest = { method, segments, params, body };
    const ifMatch = request.headers['if-match'];
    const ifNoneExist = request.headers['if-none-exist'];
    if (typeof ifMatch === 'string') req.ifMatch = ifMatch;
    if (typeof ifNoneExist === 'string') req.ifNoneExist = ifNoneExist;
    if (prefer) req.preferReturn = prefer;
    const contentType = String(request.headers['content-type'] ?? '');
    if (method === 'PATCH' && !contentType.includes('json-patch+json')) {
      throw new HospitalApiError('ERR_FHIR_UNSUPPORTED_MEDIA_TYPE', { type: contentType || 'none' });
    }
    return send(reply, dispatch(ctx, req));
  };
  app.all('/fhir', handler);
  app.all('/fhir/*', handler);
  return app;
}

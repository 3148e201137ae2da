/**
 * The Fastify app: base `/fhir`, JSON only, every error an OperationOutcome.
 * HTTP concerns (negotiation, headers, base URL, limits, who may call what) live here;
 * FHIR semantics in dispatch.ts, writes.ts and transaction.ts.
 */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { availableParallelism } from 'node:os';
import { HospitalApiError } from '../../errors/index.js';
import { isServiceCaller } from '../../util/local-peer.js';
import type { Socket } from 'node:net';
import { createBoundedHttpServer } from '../../util/socket-guard.js';
import type { SqliteFhirStore } from '../store/sqlite-store.js';
import { publicBaseUrl, type BaseUrlOptions } from './base-url.js';
import { DEFAULT_POLICY, type FhirContext, type FhirRequest, type FhirResponse, type WritePolicy } from './context.js';
import { dispatch } from './dispatch.js';
import { checkAcceptable, FHIR_JSON } from './format.js';
import { parseJsonBody } from './json-body.js';
import { bundleThread, THREAD_BODY_BYTES } from './bundle-thread.js';
import { bundleJson } from './bundle.js';
import { errorOutcome, outcome } from './outcome.js';
import { processBundle } from './transaction.js';
import { parseQueryString } from '../search/query-string.js';
import { validationThread } from './validation-thread.js';

/** The limits of the FHIR listener (issue 12: bounded resources, time-outs on every listener). */
export interface FhirLimits {
  /** Largest request body in bytes, refused with 413 while it streams in, before any parsing. */
  bodyLimit: number;
  /** Whole request (headers + body) must arrive within this many ms, else 408. */
  requestTimeoutMs: number;
  /** Headers must arrive within this many ms, else 408. */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this many ms. */
  keepAliveTimeoutMs: number;
  /** At most this many open connections; at the cap a newcomer closes the idlest one (src/util/socket-guard.ts, issue 24). */
  maxConnections: number;
  /** A connection with no request in progress (silent, trickling headers, or between requests) is closed after this. */
  idleTimeoutMs: number;
  /**
   * A transaction Bundle's checks and writes must end within this, else it is rolled back and answered 503
   * ERR_FHIR_TRANSACTION_TIMEOUT (issue 45): below the gateway's read time-out (Kong's default 60 s), so no
   * caller is told 504 about a transaction that then commits.
   */
  transactionTimeoutMs: number;
  /** Deepest JSON nesting accepted in a body (FHIR resources stay far below it). */
  maxDepth: number;
  /** Most query/form parameters in one request. */
  maxParams: number;
  /**
   * The heap a large Bundle's thread may take (bundle-thread.ts), in MB: past it the thread ends, the Bundle
   * is answered 500 with nothing committed, and the server goes on.
   */
  bundleThreadHeapMb: number;
}

export const DEFAULT_LIMITS: FhirLimits = {
  bodyLimit: 64 * 1024 * 1024,
  requestTimeoutMs: 120_000,
  headersTimeoutMs: 20_000,
  keepAliveTimeoutMs: 10_000,
  maxConnections: 256,
  idleTimeoutMs: 20_000,
  transactionTimeoutMs: 50_000,
  maxDepth: 200,
  maxParams: 200,
  // a 64 MB body parses to a few hundred MB of objects; validation's definitions take about 100 MB more
  bundleThreadHeapMb: 1536,
};

export interface FhirAppOptions extends BaseUrlOptions {
  store: SqliteFhirStore;
  policy?: Partial<WritePolicy>;
  limits?: Partial<FhirLimits>;
  /**
   * Callers that get the full API; every other one gets `GET /fhir/metadata` only (403 otherwise).
   * Default: this server's own user or root on loopback (the native gateway runs on this host as the service).
   */
  fullAccess?: (socket: Socket) => boolean | Promise<boolean>;
}

const JSON_TYPES = ['application/json', 'application/fhir+json', 'application/json+fhir', 'application/json-patch+json'];

/** `/fhir`, `/fhir/`: the base, where transaction and batch Bundles are POSTed. */
const BASE_PATH = /^\/fhir\/?$/;

/** A large Bundle's request bytes, left unparsed for the Bundle thread. */
class BundleBytes {
  constructor(readonly bytes: Buffer) {}
}

/**
 * A large create or update's body (a POST or PUT below the base, as large as a Bundle the thread takes), left
 * unparsed for the Bundle thread too (issue 45): its parse, validation, index rows and write hold the main
 * thread no more than a Bundle's do.
 */
class ResourceBytes {
  constructor(readonly bytes: Buffer) {}
}

/** A Bundle parsed here, with its request bytes (the validation thread reads them: validation-thread.ts). */
class ParsedBundle {
  constructor(readonly bytes: Buffer, readonly value: unknown) {}
}

function send(reply: FastifyReply, res: FhirResponse): FastifyReply {
  reply.code(res.status).header('content-type', FHIR_JSON);
  if (res.etag) reply.header('etag', res.etag);
  if (res.lastModified) reply.header('last-modified', res.lastModified);
  if (res.location) reply.header('location', res.location).header('content-location', res.location);
  if (res.raw !== undefined) return reply.send(res.raw);
  return reply.send(res.body === undefined ? '' : bundleJson(res.body));
}

export function buildFhirApp(options: FhirAppOptions): FastifyInstance {
  const limits: FhirLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const policy: WritePolicy = { ...DEFAULT_POLICY, ...options.policy };
  const fullAccess = options.fullAccess ?? isServiceCaller;
  const app = Fastify({
    logger: false,
    bodyLimit: limits.bodyLimit,
    exposeHeadRoutes: false,
    // node:http enforces the time-outs; its checker runs every connectionsCheckingInterval (30 s by default)
    serverFactory: (handler: (req: IncomingMessage, res: ServerResponse) => void) => createBoundedHttpServer(limits, handler),
    // A path whose percent-encoding is not UTF-8 (`/fhir/Patient/%FF`) is refused by Fastify before any route: an
    // OperationOutcome like every other error, not Fastify's own body (issue 45).
    frameworkErrors: (err, _req, reply) => {
      const [status, oo] = errorOutcome(err);
      void send(reply, { status, body: oo });
    },
  });
  app.removeAllContentTypeParsers();
  // A large Bundle POSTed to the base goes to the Bundle thread as its bytes (bundle-thread.ts); any other body
  // is parsed here in stretches, its depth and keys checked on the way (json-body.ts, issue 24).
  const thread = bundleThread(options.store, policy, { maxDepth: limits.maxDepth, heapMb: limits.bundleThreadHeapMb });
  app.addHook('onClose', () => thread.close());
  // a smaller transaction's entries are validated on a thread of their own, beside the writes (issue 28); with a
  // single core there is nothing beside the writes to run it on, and the thread would only cost its memory
  const validator = policy.validate && availableParallelism() > 1 ? validationThread() : undefined;
  app.addHook('onClose', async () => validator?.close());
  app.addContentTypeParser(JSON_TYPES, { parseAs: 'buffer' }, async (req: FastifyRequest, body: Buffer) => {
    if (req.method !== 'POST' || !BASE_PATH.test(req.url.split('?')[0] ?? '')) {
      const large = body.length >= THREAD_BODY_BYTES && (req.method === 'POST' || req.method === 'PUT');
      return large ? new ResourceBytes(body) : parseJsonBody(body, limits.maxDepth);
    }
    return body.length >= THREAD_BODY_BYTES ? new BundleBytes(body) : new ParsedBundle(body, await parseJsonBody(body, limits.maxDepth));
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_r, body, done) => done(null, String(body)));
  app.addContentTypeParser('*', (req, _payload, done) => {
    done(new HospitalApiError('ERR_FHIR_UNSUPPORTED_MEDIA_TYPE', { type: String(req.headers['content-type'] ?? 'none').slice(0, 60) }));
  });

  // Unauthenticated patient data never leaves the host: other addresses may read the CapabilityStatement only
  // (the spec's check needs GET /fhir/metadata on this port). Checked before the body is read.
  // On loopback that is this server's own user (the gateway, the toolkit's commands) or root, not every local account
  // (src/util/local-peer.ts, issue 24).
  const metadataOnly = (request: FastifyRequest, address: string): HospitalApiError | undefined => {
    const path = (request.raw.url ?? '').split('?')[0];
    if (request.method === 'GET' && (path === '/fhir/metadata' || path === '/fhir/metadata/')) return undefined;
    return new HospitalApiError('ERR_FHIR_METADATA_ONLY', { address: address.replace(/^::ffff:/, '') });
  };
  // fullAccess's answers that have settled, by the promise that gave them. isServiceCaller answers a connection
  // with one promise, made at its first request (local-peer.ts), so from a connection's second request on its
  // answer is found here and the request goes on in the same tick: an async hook cost every request a promise of
  // its own and the ticks to settle it (issue 49). A function that answers with a new promise each time is
  // awaited each time, as before; a boolean is taken as it is.
  const settled = new WeakMap<Promise<boolean>, boolean>();
  app.addHook('onRequest', (request, _reply, done) => {
    const socket = request.raw.socket;
    const address = socket.remoteAddress ?? '';
    const answer = fullAccess(socket);
    const known = typeof answer === 'boolean' ? answer : settled.get(answer);
    if (known !== undefined) return done(known ? undefined : metadataOnly(request, address));
    (answer as Promise<boolean>).then(
      (ok) => {
        settled.set(answer as Promise<boolean>, ok);
        done(ok ? undefined : metadataOnly(request, address));
      },
      (err: Error) => done(err),
    );
  });

  app.setErrorHandler((err, _req, reply) => {
    const tooLarge = (err as { code?: unknown }).code === 'FST_ERR_CTP_BODY_TOO_LARGE';
    const [status, oo] = errorOutcome(tooLarge ? new HospitalApiError('ERR_FHIR_BODY_TOO_LARGE', { limit: limits.bodyLimit }) : err);
    return send(reply, { status, body: oo });
  });
  app.setNotFoundHandler((req, reply) => send(reply, { status: 404, body: outcome(404, `No FHIR endpoint at ${req.url.split('?')[0]}`) }));

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    checkAcceptable(request);
    const ctx: FhirContext = { store: options.store, base: publicBaseUrl(request, options), policy };
    const raw = request.raw.url ?? '/fhir';
    const qIndex = raw.indexOf('?');
    const path = qIndex < 0 ? raw : raw.slice(0, qIndex);
    const params: Array<[string, string]> = qIndex < 0 ? [] : parseQueryString(raw.slice(qIndex + 1));
    const segments = path.slice('/fhir'.length).split('/').filter(Boolean).map(decodeURIComponent);
    const method = request.method.toUpperCase();
    let body = request.body;
    if (typeof body === 'string') {
      // POST [type]/_search: the form body carries the parameters
      params.push(...parseQueryString(body));
      body = undefined;
    }
    if (params.length > limits.maxParams) {
      throw new HospitalApiError('ERR_FHIR_TOO_COMPLEX', { detail: `${params.length} parameters; at most ${limits.maxParams} are accepted` });
    }
    const prefer = /return=(minimal|representation|OperationOutcome)/.exec(String(request.headers.prefer ?? ''))?.[1];
    if (segments.length === 0 && method === 'POST') {
      // counted from the whole request's arrival
      const deadline = { at: Date.now() + limits.transactionTimeoutMs, ms: limits.transactionTimeoutMs };
      ctx.deadline = deadline;
      if (body instanceof ParsedBundle) {
        const bytes = body.bytes;
        const withThread: FhirContext = validator ? { ...ctx, validateEntries: (indices) => validator.firstInvalid(bytes, indices) } : ctx;
        return send(reply, await processBundle(withThread, body.value, prefer));
      }
      if (!(body instanceof BundleBytes)) return send(reply, await processBundle(ctx, body, prefer));
      const answer = await thread.run({ body: body.bytes, base: ctx.base, deadline, ...(prefer ? { preferReturn: prefer } : {}) });
      // no thread to take it: parsed and run here, in stretches
      return send(reply, answer ?? (await processBundle(ctx, await parseJsonBody(body.bytes, limits.maxDepth), prefer)));
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
    if (body instanceof ResourceBytes) {
      const { body: _bytes, ...request } = req;
      const answer = await thread.run({ body: body.bytes, base: ctx.base, request });
      if (answer) return send(reply, answer);
      // no thread to take it: parsed here, in stretches, and written below like any other
      req.body = await parseJsonBody(body.bytes, limits.maxDepth);
    }
    // a write waits while a large Bundle holds the store (store.exclusive), then runs in this same stretch
    if (method !== 'GET' && method !== 'HEAD') for (let g = options.store.writeGate(); g; g = options.store.writeGate()) await g;
    return send(reply, dispatch(ctx, req));
  };
  app.all('/fhir', handler);
  app.all('/fhir/*', handler);
  return app;
}

/**
 * The FHIR door (docker runtime, issue 24): HAPI has no authentication, and a port Docker publishes is
 * reached through docker-proxy, so the caller's uid (which the native FHIR server checks,
 * src/util/local-peer.ts) is invisible. The door is published in HAPI's place and forwards to one
 * fixed upstream (http://hapi:8080): GET/HEAD /fhir/metadata to anyone (check 4.5.2, `status`), every
 * other request only with `Authorization: Bearer <door token>`, compared in constant time. Refusals are
 * an OperationOutcome (http://hl7.org/fhir/R4/operationoutcome.html) carrying a stable code in
 * details.text, and `WWW-Authenticate: Bearer` on a 401 (RFC 6750 §3).
 *
 * Bodies stream both ways (undici). Headers the RFC calls hop-by-hop (RFC 9110 §7.6.1: Connection and
 * the fields it names, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-*) are not forwarded,
 * nor the caller's Authorization: the token stops here. A response the upstream breaks off mid-way
 * is broken off to the caller too (the socket is destroyed before the terminating chunk or before
 * Content-Length is reached), so it never looks complete. The token is never logged, and neither is a
 * request's path or query (they may name patients).
 */
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { Pool } from 'undici';
import { HospitalApiError, toHospitalApiError } from '../errors/index.js';
import { safeEqual } from '../util/constant-time.js';
import { createBoundedHttpServer, type PlainHttpLimits } from '../util/socket-guard.js';
import { bearerToken, isOpen, parseTarget } from './target.js';

export type DoorLimits = PlainHttpLimits & { upstreamTimeoutMs: number };

/** As the native FHIR server bounds its own listener (src/fhir/server/app.ts DEFAULT_LIMITS); HAPI gets 5 minutes per answer. */
export const DOOR_LIMITS: DoorLimits = Object.freeze({
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 120_000,
  keepAliveTimeoutMs: 10_000,
  idleTimeoutMs: 20_000,
  maxConnections: 256,
  upstreamTimeoutMs: 300_000,
});

export interface FhirDoorOptions {
  host: string;
  port: number;
  /** The only place requests go: an http origin such as http://hapi:8080. */
  upstream: string;
  token: string;
  limits?: Partial<DoorLimits>;
  /** Lines about the door itself (start, upstream failures); never a token, path or query. */
  log?: (line: string) => void;
}

export interface FhirDoor {
  url: string;
  server: Server;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function copyHeaders(from: IncomingHttpHeaders | Record<string, string | string[] | undefined>, drop: readonly string[]): Record<string, string | string[]> {
  const named = String(from.connection ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const out = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of Object.entries(from)) {
    const key = name.toLowerCase();
    if (value === undefined || key === '__proto__' || HOP_BY_HOP.has(key) || named.includes(key) || drop.includes(key)) continue;
    out[key] = value;
  }
  return out;
}

function upstreamOrigin(upstream: string): string {
  let u: URL;
  try {
    u = new URL(upstream);
  } catch {
    throw new HospitalApiError('ERR_USAGE', { detail: `--upstream must be an http origin such as http://hapi:8080, got "${upstream}"` });
  }
  if (u.protocol !== 'http:' || u.username || u.password || (u.pathname !== '/' && u.pathname !== '') || u.search || u.hash) {
    throw new HospitalApiError('ERR_USAGE', { detail: `--upstream must be an http origin such as http://hapi:8080, got "${upstream}"` });
  }
  return u.origin;
}

function refuse(res: ServerResponse, err: unknown): void {
  const e = toHospitalApiError(err);
  const body = JSON.stringify({
    resourceType: 'OperationOutcome',
    issue: [{ severity: 'error', code: e.status === 401 ? 'login' : e.status >= 500 ? 'transient' : 'invalid', diagnostics: e.message, details: { text: e.code } }],
  });
  const headers: Record<string, string | number> = {
    'content-type': 'application/fhir+json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    // an unread request body would otherwise be parsed as the next request
    connection: 'close',
  };
  if (e.status === 401) headers['www-authenticate'] = 'Bearer realm="fhir"';
  res.writeHead(e.status, headers).end(body);
}

/** Starts the door on host:port. @throws ERR_USAGE for an upstream that is not an http origin or an empty token */
export async function startFhirDoor(options: FhirDoorOptions): Promise<FhirDoor> {
  const origin = upstreamOrigin(options.upstream);
  if (options.token.length < 16) throw new HospitalApiError('ERR_FHIR_DOOR_TOKEN', { path: '(given)', detail: 'shorter than 16 characters' });
  const limits: DoorLimits = { ...DOOR_LIMITS, ...options.limits };
  const log = options.log ?? (() => {});
  const pool = new Pool(origin, { headersTimeout: limits.upstreamTimeoutMs, bodyTimeout: limits.upstreamTimeoutMs, connections: 64 });
  const token = options.token;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const target = parseTarget(req.url);
    if (!isOpen(req.method, target)) {
      const given = bearerToken(req.headers.authorization);
      if (given === null) throw new HospitalApiError('ERR_FHIR_DOOR_UNAUTHORIZED', { detail: 'no Authorization: Bearer header' });
      if (!safeEqual(given, token)) throw new HospitalApiError('ERR_FHIR_DOOR_UNAUTHORIZED', { detail: 'the token does not match' });
    }
    const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    // the caller went away: stop asking the upstream
    const abort = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    let answer: Awaited<ReturnType<Pool['request']>>;
    try {
      answer = await pool.request({
        path: target.raw,
        method: req.method as 'GET',
        // Expect: Node's server has already answered 100-continue to the caller; undici refuses to send it
        headers: copyHeaders(req.headers, ['authorization', 'expect']),
        body: hasBody ? req : null,
        signal: abort.signal,
      });
    } catch (err) {
      if (abort.signal.aborted) return;
      const code = (err as { code?: unknown }).code;
      log(`fhir-door: the upstream did not answer (${typeof code === 'string' ? code : (err as Error).name})`);
      throw new HospitalApiError('ERR_FHIR_DOOR_UPSTREAM', { detail: typeof code === 'string' ? code : 'no answer' });
    }
    res.writeHead(answer.statusCode, copyHeaders(answer.headers, []));
    try {
      await pipeline(answer.body, res);
    } catch (err) {
      if (!abort.signal.aborted) {
        const code = (err as { code?: unknown }).code;
        log(`fhir-door: the upstream broke off a response (${typeof code === 'string' ? code : (err as Error).name}); broken off to the caller too`);
      }
      // pipeline destroyed res already; make sure the socket goes, so the caller sees an incomplete response
      res.destroy();
      req.socket.destroy();
    }
  };

  const server = createBoundedHttpServer(limits, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else refuse(res, err);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  log(`fhir-door: listening on ${url}, forwarding to ${origin} (GET/HEAD /fhir/metadata open, everything else needs the door token)`);
  return {
    url,
    server,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await pool.close();
    },
  };
}

/**
 * The proxy's HTTP and HTTPS listeners (Kong's proxy_listen, kong.conf.default). Plain node:http/https
 * servers rather than Fastify: the proxy hot path has no routing or
 * serialisation for a framework to do, and every layer costs req/s
 * (measured here, 2 cores: node:http 28.9 k req/s, Fastify 23.6 k, a Fastify proxy 3.9–5.5 k).
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createSecureServer, type Http2SecureServer, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { INTERMEDIATE_POLICY, type TlsServerPolicy } from '../../tls/cipher-policy.js';
import type { ListenAddress } from '../../util/listen-address.js';
import { guardSockets, serverTimeouts } from '../../util/socket-guard.js';
import { DEFAULT_UPSTREAM_LIMITS, type GatewayProxy, type UpstreamLimits } from './gateway-proxy.js';
import { DEFAULT_H2_LIMITS, guardH2, refusedStream, type H2Limits } from './h2-guard.js';
import { DEFAULT_BODY_LIMITS } from './request-body.js';
import { SERVER, serverTokensOn } from './kong-response.js';

/**
 * Time-outs and the connection cap of every proxy listener (issue 12), after
 * Kong's nginx defaults: client_header_timeout 60s, keepalive_timeout 60s.
 * nginx's client_body_timeout is per read, so a client trickling a byte a
 * minute is never cut; here the whole request (headers and body, chunked
 * included) must arrive within `requestTimeoutMs`, else 408 and the
 * connection closes. At `maxConnections` a new connection closes the one idle
 * the longest (src/util/socket-guard.ts, issue 24); a connection with no
 * request in progress for `idleTimeoutMs`, or a TLS one without a finished
 * handshake after `handshakeTimeoutMs`, is closed.
 */
export interface ProxyLimits extends H2Limits, UpstreamLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** Idle time between requests on a keep-alive connection. */
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** How often Node checks the two time-outs above (its default is 30 s). */
  checkIntervalMs: number;
  /** A TLS connection must finish its handshake within this (nginx's ssl_handshake_timeout, 60 s). */
  handshakeTimeoutMs: number;
  /** A connection with no request in progress (silent, or trickling its headers) is closed after this. */
  idleTimeoutMs: number;
  /**
   * nginx's client_body_timeout (Kong's default 60 s): the longest wait between two reads of a
   * request body the gateway reads whole (request buffering, issue 45); past it, 408.
   */
  bodyTimeoutMs: number;
  /** Bytes of request bodies the proxy holds in memory at once, over every request; past it, 503 (request-body.ts). */
  maxBufferedBodyBytes: number;
}

export const DEFAULT_PROXY_LIMITS: ProxyLimits = {
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 120_000,
  keepAliveTimeoutMs: 60_000,
  maxConnections: 10_000,
  checkIntervalMs: 1_000,
  handshakeTimeoutMs: 60_000,
  idleTimeoutMs: 60_000,
  ...DEFAULT_BODY_LIMITS,
  ...DEFAULT_H2_LIMITS,
  ...DEFAULT_UPSTREAM_LIMITS,
}

export interface ProxyListenerOptions {
  proxy: GatewayProxy;
  http?: ListenAddress | null;
  https?: (ListenAddress & { cert: string; key: string }) | null;
  /** Protocols, ciphers and cipher order of the TLS listener (tls-settings.ts); default Mozilla intermediate, as Kong's. */
  tlsPolicy?: TlsServerPolicy;
  limits?: Partial<ProxyLimits>;
}

export interface ProxyListeners {
  http: AddressInfo | null;
  https: AddressInfo | null;
  /** New certificate and key for new TLS connections; open connections keep theirs (`cert renew`). */
  setTls(tls: { cert: string; key: string }): void;
  close(): Promise<void>;
}

function listen(server: AnyServer, at: ListenAddress): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

type AnyServer = Server | Http2SecureServer;

/**
 * HTTP/2 streams have no Node request time-out (headersTimeout/requestTimeout
 * cover HTTP/1 only): a stream whose body has not all arrived in time gets 408
 * (or is reset when the answer has begun).
 */
function h2RequestTimer(req: IncomingMessage, res: ServerResponse, ms: number): void {
  const timer = setTimeout(() => {
    if (req.complete) return;
    if (!res.headersSent) {
      res.writeHead(408, ['Content-Length', '0', ...(serverTokensOn() ? ['Server', SERVER] : [])]);
      res.end();
    }
    (req as unknown as Http2ServerRequest).stream.close();
  }, ms);
  const clear = (): void => clearTimeout(timer);
  req.once('end', clear);
  res.once('close', clear);
}

/** A throw here would end the process: answer 500 instead (Kong's default message, kong/tools/http.lua). */
function guarded(proxy: GatewayProxy, scheme: 'http' | 'https', limits: ProxyLimits) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    try {
      if (req.httpVersionMajor === 2) {
        // A stream refused by the per-client cap (h2-guard.ts) is already reset.
        if (refusedStream((req as unknown as Http2ServerRequest).stream)) return;
        h2RequestTimer(req, res, limits.requestTimeoutMs);
      }
      proxy.handle(req, res, scheme);
    } catch (err) {
      process.stderr.write(`gateway: request failed (${(err as Error)?.name ?? 'error'})\n`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=utf-8', ...(serverTokensOn() ? { server: SERVER } : {}) });
      res.end('{"message":"An unexpected error occurred"}');
    }
  };
}

const TIMEOUT_408 = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';
const BAD_400 = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

function serverOptions(l: ProxyLimits) {
  return { noDelay: true, ...serverTimeouts(l), connectionsCheckingInterval: l.checkIntervalMs };
}

function tune(server: AnyServer, l: ProxyLimits, tls: boolean): void {
  guardSockets(server, l, { tls });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // A request already being answered (the proxy wrote headers) can only be cut.
    const answering = (socket as { _httpMessage?: ServerResponse })._httpMessage?.headersSent === true;
    if (socket.writable && !answering) socket.end(err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? TIMEOUT_408 : BAD_400);
    else socket.destroy();
  });
}

function closeServer(server: AnyServer): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    if ('closeIdleConnections' in server) server.closeIdleConnections();
    const h2 = sessions.get(server);
    for (const s of h2 ?? []) s.close(); // graceful: open streams finish
    setTimeout(() => {
      if ('closeAllConnections' in server && typeof server.closeAllConnections === 'function') server.closeAllConnections();
      for (const s of h2 ?? []) s.destroy();
    }, 2000).unref();
  });
}

const sessions = new WeakMap<AnyServer, Set<import('node:http2').ServerHttp2Session>>();

export async function startProxyListeners(o: ProxyListenerOptions): Promise<ProxyListeners> {
  const limits: ProxyLimits = { ...DEFAULT_PROXY_LIMITS, ...(o.limits ?? {}) };
  o.proxy.useLimits(limits);
  const policy: TlsServerPolicy = { ...(o.tlsPolicy ?? INTERMEDIATE_POLICY) };
  const servers: AnyServer[] = [];
  let http: AddressInfo | null = null;
  let https: AddressInfo | null = null;
  let tlsServer: Http2SecureServer | null = null;
  try {
    if (o.http) {
      const server = createHttpServer(serverOptions(limits), guarded(o.proxy, 'http', limits));
      tune(server, limits, false);
      server.on('connection', o.proxy.countConnection);
      servers.push(server);
      http = await listen(server, o.http);
    }
    if (o.https) {
      const proxy = o.proxy;
      // Kong serves HTTP/2 on its TLS proxy by default (ALPN h2, http/1.1); HTTP/1.1 clients are still answered.
      const server = createSecureServer(
        {
          ...serverOptions(limits),
          allowHTTP1: true,
          // protocols, ciphers, client-chosen order (Node's own default honours the server's order)
          ...policy,
          cert: o.https.cert,
          key: o.https.key,
          // nginx's http2_max_concurrent_streams (h2-guard.ts)
          settings: { maxConcurrentStreams: limits.h2MaxConcurrentStreams },
          // Kong's certificate phase: an SNI entity's certificate, else the listener's own.
          SNICallback: (servername, cb) => {
            try {
              cb(null, proxy.secureContext(servername) ?? undefined);
            } catch (err) {
              cb(err as Error, undefined);
            }
          },
        },
        guarded(o.proxy, 'https', limits) as unknown as (req: Http2ServerRequest, res: Http2ServerResponse) => void,
      );
      // The HTTP/1.1 side of this server gets the plain listener's header and request time-outs from guardSockets.
      const open = new Set<import('node:http2').ServerHttp2Session>();
      sessions.set(server, open);
      server.on('session', (session) => {
        open.add(session);
        session.once('close', () => open.delete(session));
        // Idle HTTP/2 connections close like keep-alive ones (graceful: open streams finish).
        session.setTimeout(limits.keepAliveTimeoutMs, () => session.close());
      });
      tune(server, limits, true);
      guardH2(server, limits);
      server.on('connection', o.proxy.countConnection);
      servers.push(server);
      tlsServer = server;
      https = await listen(server, o.https);
    }
  } catch (err) {
    await Promise.all(servers.map(closeServer));
    throw err;
  }
  return {
    http,
    https,
    // setSecureContext replaces the whole context: the policy goes with the new pair, else a renewal would fall back to Node's defaults
    setTls: (tls) => tlsServer?.setSecureContext({ ...policy, cert: tls.cert, key: tls.key }),
    close: async () => {
      await Promise.all(servers.map(closeServer));
    },
  };
}

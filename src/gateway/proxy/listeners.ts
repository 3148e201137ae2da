/**
 * The proxy's HTTP and HTTPS listeners (kong.md §4). Plain node:http/https
 * servers rather than Fastify: the proxy hot path has no routing or
 * serialisation for a framework to do, and every layer costs req/s
 * (libraries.md §3).
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ListenAddress } from '../../util/listen-address.js';
import type { GatewayProxy } from './gateway-proxy.js';
import { SERVER } from './kong-response.js';

/**
 * Time-outs and the connection cap of every proxy listener (issue 12), after
 * Kong's nginx defaults: client_header_timeout 60s, keepalive_timeout 60s.
 * nginx's client_body_timeout is per read, so a client trickling a byte a
 * minute is never cut; here the whole request (headers and body, chunked
 * included) must arrive within `requestTimeoutMs`, else 408 and the
 * connection closes. Past `maxConnections` a new connection is closed at once.
 */
export interface ProxyLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** Idle time between requests on a keep-alive connection. */
  keepAliveTimeoutMs: number;
  maxConnections: number;
  /** How often Node checks the two time-outs above (its default is 30 s). */
  checkIntervalMs: number;
}

export const DEFAULT_PROXY_LIMITS: ProxyLimits = {
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 120_000,
  keepAliveTimeoutMs: 60_000,
  maxConnections: 10_000,
  checkIntervalMs: 1_000,
};

export interface ProxyListenerOptions {
  proxy: GatewayProxy;
  http?: ListenAddress | null;
  https?: (ListenAddress & { cert: string; key: string }) | null;
  limits?: Partial<ProxyLimits>;
}

export interface ProxyListeners {
  http: AddressInfo | null;
  https: AddressInfo | null;
  close(): Promise<void>;
}

function listen(server: Server, at: ListenAddress): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** A throw here would end the process: answer 500 instead (kong.md §2 default message). */
function guarded(proxy: GatewayProxy, scheme: 'http' | 'https') {
  return (req: IncomingMessage, res: ServerResponse): void => {
    try {
      proxy.handle(req, res, scheme);
    } catch (err) {
      process.stderr.write(`gateway: request failed (${(err as Error)?.name ?? 'error'})\n`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json; charset=utf-8', server: SERVER });
      res.end('{"message":"An unexpected error occurred"}');
    }
  };
}

const TIMEOUT_408 = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';
const BAD_400 = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

function serverOptions(l: ProxyLimits) {
  return {
    noDelay: true,
    headersTimeout: l.headersTimeoutMs,
    requestTimeout: l.requestTimeoutMs,
    keepAliveTimeout: l.keepAliveTimeoutMs,
    connectionsCheckingInterval: l.checkIntervalMs,
  };
}

function tune(server: Server, l: ProxyLimits): void {
  server.maxConnections = l.maxConnections;
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // A request already being answered (the proxy wrote headers) can only be cut.
    const answering = (socket as { _httpMessage?: ServerResponse })._httpMessage?.headersSent === true;
    if (socket.writable && !answering) socket.end(err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? TIMEOUT_408 : BAD_400);
    else socket.destroy();
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 2000).unref();
  });
}

export async function startProxyListeners(o: ProxyListenerOptions): Promise<ProxyListeners> {
  const limits: ProxyLimits = { ...DEFAULT_PROXY_LIMITS, ...(o.limits ?? {}) };
  const servers: Server[] = [];
  let http: AddressInfo | null = null;
  let https: AddressInfo | null = null;
  try {
    if (o.http) {
      const server = createHttpServer(serverOptions(limits), guarded(o.proxy, 'http'));
      tune(server, limits);
      servers.push(server);
      http = await listen(server, o.http);
    }
    if (o.https) {
      const proxy = o.proxy;
      const server = createHttpsServer(
        {
          ...serverOptions(limits),
          cert: o.https.cert,
          key: o.https.key,
          // Kong's certificate phase: an SNI entity's certificate, else the listener's own.
          SNICallback: (servername, cb) => {
            try {
              cb(null, proxy.secureContext(servername) ?? undefined);
            } catch (err) {
              cb(err as Error, undefined);
            }
          },
        },
        guarded(o.proxy, 'https'),
      );
      tune(server, limits);
      servers.push(server);
      https = await listen(server, o.https);
    }
  } catch (err) {
    await Promise.all(servers.map(closeServer));
    throw err;
  }
  return {
    http,
    https,
    close: async () => {
      await Promise.all(servers.map(closeServer));
    },
  };
}

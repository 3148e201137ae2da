/**
 * The proxy's HTTP and HTTPS listeners (kong.md §4). Plain node:http/https
 * servers rather than Fastify: the proxy hot path has no routing or
 * serialisation for a framework to do, and every layer costs req/s
 * (libraries.md §3).
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { ListenAddress } from '../../util/listen-address.js';
import type { GatewayProxy } from './gateway-proxy.js';
import { SERVER } from './kong-response.js';

const KEEP_ALIVE_MS = 60_000; // Kong's keepalive_timeout 60s

export interface ProxyListenerOptions {
  proxy: GatewayProxy;
  http?: ListenAddress | null;
  https?: (ListenAddress & { cert: string; key: string }) | null;
}

export interface ProxyListeners {
  http: AddressInfo | null;
  https: AddressInfo | null;
  /** New certificate and key for new TLS connections; open connections keep theirs (`cert renew`). */
  setTls(tls: { cert: string; key: string }): void;
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

function tune(server: Server): void {
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
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
  const servers: Server[] = [];
  let http: AddressInfo | null = null;
  let https: AddressInfo | null = null;
  let tlsServer: HttpsServer | null = null;
  try {
    if (o.http) {
      const server = createHttpServer({ noDelay: true }, guarded(o.proxy, 'http'));
      tune(server);
      servers.push(server);
      http = await listen(server, o.http);
    }
    if (o.https) {
      const server = createHttpsServer({ cert: o.https.cert, key: o.https.key, noDelay: true }, guarded(o.proxy, 'https'));
      tune(server);
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
    setTls: (tls) => tlsServer?.setSecureContext({ cert: tls.cert, key: tls.key }),
    close: async () => {
      await Promise.all(servers.map(closeServer));
    },
  };
}

/**
 * Issue 12 on the proxy listeners: duplicate Host → 400 (nginx), a client
 * that trickles its headers or body (chunked included) is cut with 408, and
 * connections past the cap are closed. Raw sockets against the real listener.
 */
import { connect, type Socket } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayProxy } from '../../../src/gateway/proxy/gateway-proxy.js';
import { startProxyListeners, type ProxyListeners } from '../../../src/gateway/proxy/listeners.js';
import { emptyConfig, route, service, Snapshots, startUpstream } from './harness.js';

/** Opens a socket, writes `first`, then one byte of `trickle` every 100 ms; resolves with all it read once closed. */
function trickle(port: number, first: string, trickleBytes = ''): Promise<string> {
  return new Promise((resolve) => {
    const s: Socket = connect(port, '127.0.0.1');
    let got = '';
    let i = 0;
    const timer = setInterval(() => {
      if (i < trickleBytes.length && !s.destroyed) s.write(trickleBytes[i++] as string);
    }, 100);
    s.on('data', (d) => (got += d.toString('latin1')));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearInterval(timer);
      resolve(got);
    });
    s.write(first);
  });
}

describe('proxy listener limits', () => {
  let upstream: { server: Server; port: number };
  let proxy: GatewayProxy;
  let listeners: ProxyListeners;
  let port: number;
  const snapshots = new Snapshots();

  beforeAll(async () => {
    upstream = await startUpstream();
    const c = emptyConfig();
    route(c, service(c, { host: '127.0.0.1', port: upstream.port }), { paths: ['/'] });
    snapshots.set(c);
    proxy = new GatewayProxy(snapshots.get);
    listeners = await startProxyListeners({
      proxy,
      http: { host: '127.0.0.1', port: 0 },
      limits: { headersTimeoutMs: 500, requestTimeoutMs: 800, checkIntervalMs: 50, maxConnections: 3 },
    });
    port = listeners.http!.port;
  });
  afterAll(async () => {
    await listeners.close();
    await proxy.close();
    upstream.server.close();
  });

  it('answers 400 to two Host headers, as nginx does', async () => {
    const out = await trickle(port, 'GET /x HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nConnection: close\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 400 /);
    const one = await trickle(port, 'GET /x HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n');
    expect(one).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('cuts a client that trickles its headers with 408', async () => {
    const out = await trickle(port, 'GET /x HTTP/1.1\r\n', 'X-Slow: ' + 'a'.repeat(40));
    expect(out).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('cuts a client that trickles a Content-Length body with 408', async () => {
    const out = await trickle(port, 'POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n', 'b'.repeat(100));
    expect(out).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('cuts a client that trickles a chunked body with 408', async () => {
    const out = await trickle(port, 'POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n', '1\r\nx\r\n'.repeat(30));
    expect(out).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes connections past the cap', async () => {
    const held: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      const s = connect(port, '127.0.0.1');
      // A keep-alive request answered proves the server has accepted (and counts) the connection.
      s.write('GET /x HTTP/1.1\r\nHost: h\r\n\r\n');
      await new Promise((r) => s.once('data', r));
      held.push(s);
    }
    try {
      const out = await trickle(port, 'GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n');
      expect(out).toBe('');
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

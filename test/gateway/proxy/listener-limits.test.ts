/**
 * Issue 12 on the proxy listeners: duplicate Host → 400 (nginx), a client
 * that trickles its headers or body (chunked included) is cut with 408, and
 * at the cap a newcomer is served and the idlest connection closed (issue 24). Raw sockets against the real listener.
 */
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { route, service, useProxy } from './harness.js';

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
  const gw = useProxy((c, upstreamPort) => {
    route(c, service(c, { host: '127.0.0.1', port: upstreamPort }), { paths: ['/'] });
  }, () => ({ limits: { headersTimeoutMs: 500, requestTimeoutMs: 800, checkIntervalMs: 50, maxConnections: 3 } }));
  const port = () => gw.listeners.http!.port;

  it('answers 400 to two Host headers, as nginx does', async () => {
    const out = await trickle(port(), 'GET /x HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nConnection: close\r\n\r\n');
    expect(out).toMatch(/^HTTP\/1\.1 400 /);
    const one = await trickle(port(), 'GET /x HTTP/1.1\r\nHost: a.example\r\nConnection: close\r\n\r\n');
    expect(one).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('cuts a client that trickles its headers with 408', async () => {
    const out = await trickle(port(), 'GET /x HTTP/1.1\r\n', 'X-Slow: ' + 'a'.repeat(40));
    expect(out).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('cuts a client that trickles a Content-Length body with 408', async () => {
    const out = await trickle(port(), 'POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n', 'b'.repeat(100));
    expect(out).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('cuts a client that trickles a chunked body with 408', async () => {
    const out = await trickle(port(), 'POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n', '1\r\nx\r\n'.repeat(30));
    expect(out).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('at the cap serves a newcomer and closes the connection idle the longest', async () => {
    const held: Socket[] = [];
    for (let i = 0; i < 3; i++) {
      const s = connect(port(), '127.0.0.1');
      // A keep-alive request answered proves the server has accepted (and counts) the connection.
      s.write('GET /x HTTP/1.1\r\nHost: h\r\n\r\n');
      await new Promise((r) => s.once('data', r));
      held.push(s);
    }
    try {
      const firstClosed = new Promise((r) => held[0]!.once('close', r));
      const out = await trickle(port(), 'GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n');
      expect(out).toMatch(/^HTTP\/1\.1 200 /);
      await firstClosed;
      expect(held.slice(1).map((s) => s.destroyed)).toEqual([false, false]);
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

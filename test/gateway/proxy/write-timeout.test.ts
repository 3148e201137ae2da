/**
 * write_timeout (Kong's service timeouts, kong/runloop/handler.lua): a streamed request body the
 * upstream stops taking for write_timeout ends the call with Kong's 504; a
 * slow but moving upload under the same timeout still goes through.
 */
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyConfig, route, service, Snapshots, startProxy, startUpstream } from './harness.js';

const MB = 1024 * 1024;

/** A body of `total` bytes in 64 KB chunks, produced on demand (backpressure-aware). */
function lazyBody(total: number, delayMs = 0): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const n = Math.min(64 * 1024, total - sent);
      sent += n;
      if (delayMs > 0) setTimeout(() => this.push(Buffer.alloc(n, 7)), delayMs);
      else this.push(Buffer.alloc(n, 7));
    },
  });
}

describe('service write_timeout', () => {
  let gw: Awaited<ReturnType<typeof startProxy>>;
  let stalled: Server;
  let echo: Awaited<ReturnType<typeof startUpstream>>;

  beforeAll(async () => {
    // Accepts connections and never reads: the gateway's writes stall once the socket buffers fill.
    stalled = createServer((socket) => socket.pause());
    await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
    echo = await startUpstream((_req, res, body) => res.end(JSON.stringify({ total: body.length })));
    const c = emptyConfig();
    const port = (stalled.address() as AddressInfo).port;
    route(c, service(c, { host: '127.0.0.1', port, write_timeout: 300, read_timeout: 60_000 }), { paths: ['/stalled'], request_buffering: false });
    route(c, service(c, { host: '127.0.0.1', port: echo.port, write_timeout: 300 }), { paths: ['/slow-upload'], request_buffering: false });
    const snapshots = new Snapshots();
    snapshots.set(c);
    gw = await startProxy(snapshots);
  });
  afterAll(async () => {
    await gw.close();
    stalled.close();
    echo.server.closeAllConnections();
    echo.server.close();
  });

  it('answers 504 when the upstream stops taking the request body', async () => {
    const started = Date.now();
    const res = await request(`${gw.url}/stalled/upload`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', accept: 'application/json' },
      body: lazyBody(256 * MB),
    });
    const body = (await res.body.json()) as { message: string };
    expect(res.statusCode).toBe(504);
    expect(body.message).toBe('The upstream server is timing out');
    // Well before the 60 s read_timeout: the write timeout ended it.
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 30_000);

  it('keeps a slow upload whose chunks keep arriving (the timer runs only while the upstream is not taking writes)', async () => {
    // 16 chunks 50 ms apart: 800 ms in all, longer than write_timeout, never stalled by the upstream.
    const res = await request(`${gw.url}/slow-upload/x`, { method: 'POST', body: lazyBody(16 * 64 * 1024, 50) });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ total: 16 * 64 * 1024 });
  });
});

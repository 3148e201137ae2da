/**
 * Request bodies through the proxy (issue 45): the size limit holds for every
 * protocol and framing (an HTTP/2 stream without a length, HTTP/1.1 chunked),
 * and the body is read whole before the upstream request opens (Kong's
 * proxy_request_buffering on), so a slow upload never holds an upstream connection.
 */
import type { ClientHttp2Session } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCa, issueCertificate, type KeyAndCert } from '../../../src/tls/pki.js';
import { silentSocket } from '../../helpers/raw-socket.js';
import { until } from '../../helpers/until.js';
import { emptyConfig, h2Session, plugin, route, service, Snapshots, startProxyOn, startUpstream, type RunningProxy } from './harness.js';

const LIMIT = 1000;

describe('request bodies: size limit on every framing', () => {
  let ca: KeyAndCert;
  let cert: KeyAndCert;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let gw: RunningProxy;
  /** Body bytes the upstream received, over all requests. */
  let upstreamBytes = 0;
  const snapshots = new Snapshots();

  beforeAll(async () => {
    ca = generateCa({ commonName: 'Body Test CA' });
    cert = issueCertificate(ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1'], usage: 'server' });
    upstream = await startUpstream((_req, res, body) => {
      upstreamBytes += body.length;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`got ${body.length}`);
    });
    const c = emptyConfig();
    const s = service(c, { host: '127.0.0.1', port: upstream.port });
    plugin(c, 'request-size-limiting', { allowed_payload_size: LIMIT, size_unit: 'bytes' }, { route: route(c, s, { paths: ['/limited'] }) });
    snapshots.set(c);
    gw = await startProxyOn(snapshots, { https: { cert: cert.certPem, key: cert.keyPem } });
  });
  afterAll(async () => {
    await gw.close();
    upstream.server.close();
  });

  const h2 = (): Promise<ClientHttp2Session> => h2Session(gw.httpsUrl, ca.certPem);

  /** An HTTP/2 POST whose body is sent in `chunks` DATA frames with no content-length; resolves with the status and body. */
  function h2Post(session: ClientHttp2Session, path: string, chunks: Buffer[]): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = session.request({ ':path': path, ':method': 'POST', 'content-type': 'application/octet-stream' });
      let status = 0;
      let body = '';
      req.on('response', (h) => (status = Number(h[':status'])));
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => resolve({ status, body }));
      req.on('error', reject);
      for (const c of chunks) req.write(c);
      req.end();
    });
  }

  it('refuses an HTTP/2 body without content-length past the limit with 413; it never reaches the upstream', async () => {
    const session = await h2();
    try {
      const before = upstreamBytes;
      const big = await h2Post(session, '/limited/x', Array.from({ length: 10 }, () => Buffer.alloc(LIMIT / 2, 'x')));
      expect(big.status).toBe(413);
      expect(JSON.parse(big.body)).toMatchObject({ message: 'Request size limit exceeded' });
      expect(upstreamBytes).toBe(before);
      // Under the limit, the same framing is proxied whole.
      const small = await h2Post(session, '/limited/x', [Buffer.alloc(300, 'y'), Buffer.alloc(300, 'y')]);
      expect(small).toEqual({ status: 200, body: 'got 600' });
    } finally {
      session.close();
    }
  });

  it('refuses a chunked HTTP/1.1 body past the limit with 413', async () => {
    const before = upstreamBytes;
    const res = await fetch(`${gw.url}/limited/x`, {
      method: 'POST',
      body: new ReadableStream({
        start(c) {
          for (let i = 0; i < 4; i++) c.enqueue(new Uint8Array(LIMIT / 2));
          c.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    await res.arrayBuffer();
    expect(upstreamBytes).toBe(before);
  });
});

describe('request buffering: the body is read whole before the upstream request opens', () => {
  let ca: KeyAndCert;
  let cert: KeyAndCert;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let gw: RunningProxy;
  /** Every request whose head reached the upstream: method, path and content-length. */
  const seen: string[] = [];
  const snapshots = new Snapshots();
  const BUDGET = 5000;

  beforeAll(async () => {
    ca = generateCa({ commonName: 'Buffering Test CA' });
    cert = issueCertificate(ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1'], usage: 'server' });
    upstream = await startUpstream((_req, res, body) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`got ${body.toString('latin1')}`);
    });
    upstream.server.on('request', (req) => seen.push(`${req.method} ${req.url} ${req.headers['content-length'] ?? '-'}`));
    const c = emptyConfig();
    const s = service(c, { host: '127.0.0.1', port: upstream.port });
    route(c, s, { paths: ['/buffered'] });
    route(c, s, { paths: ['/streamed'], request_buffering: false });
    snapshots.set(c);
    gw = await startProxyOn(snapshots, {
      https: { cert: cert.certPem, key: cert.keyPem },
      limits: { bodyTimeoutMs: 400, maxBufferedBodyBytes: BUDGET, checkIntervalMs: 50 },
    });
  });
  afterAll(async () => {
    await gw.close();
    upstream.server.close();
  });

  const at = () => ({ host: '127.0.0.1', port: gw.listeners.http!.port });
  const post = (path: string, length: number) => `POST ${path} HTTP/1.1\r\nHost: h\r\nContent-Length: ${length}\r\n\r\n`;

  it('holds a slow upload in the gateway: the upstream sees it only once whole, and an honest caller passes meanwhile', async () => {
    seen.length = 0;
    const slow = await silentSocket(at());
    slow.socket.write(`${post('/buffered/slow', 10)}abc`);
    await until(() => gw.proxy.stats.requestsInFlight === 1, { what: 'the gateway has the slow upload' });
    const honest = await fetch(`${gw.url}/buffered/honest`);
    expect([honest.status, await honest.text()]).toEqual([200, 'got ']);
    expect(seen).toEqual(['GET /honest -']);
    slow.socket.write('defghij');
    await until(() => slow.received().includes('got abcdefghij'), { what: 'the whole upload answered' });
    expect(seen).toEqual(['GET /honest -', 'POST /slow 10']);
    slow.socket.destroy();
  });

  it('answers 408 when the body stalls past the body time-out, closes the connection, and the upstream never sees it', async () => {
    seen.length = 0;
    const slow = await silentSocket(at());
    slow.socket.write(`${post('/buffered/stalled', 10)}a`);
    await slow.closed;
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(slow.received()).toContain('Request timeout');
    expect(seen).toEqual([]);
  });

  it('answers 408 to an HTTP/2 stream whose body stalls; the upstream never sees it', async () => {
    seen.length = 0;
    const session = await h2Session(gw.httpsUrl, ca.certPem);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = session.request({ ':path': '/buffered/h2', ':method': 'POST' });
        req.on('response', (h) => resolve(Number(h[':status'])));
        req.on('error', reject);
        req.write('a');
      });
      expect(status).toBe(408);
      expect(seen).toEqual([]);
    } finally {
      session.close();
    }
  });

  it('streams the body as it comes on a route with request_buffering false (a field of Kong routes)', async () => {
    seen.length = 0;
    const slow = await silentSocket(at());
    slow.socket.write(`${post('/streamed/s', 4)}ab`);
    await until(() => seen.length === 1, { what: 'the upstream sees the request before its body is whole' });
    expect(seen).toEqual(['POST /s 4']);
    slow.socket.write('cd');
    await until(() => slow.received().includes('got abcd'), { what: 'the streamed upload answered' });
    slow.socket.destroy();
  });

  it('refuses with 503 and Retry-After a body that would pass the memory budget for bodies', async () => {
    seen.length = 0;
    const res = await fetch(`${gw.url}/buffered/big`, { method: 'POST', body: 'x'.repeat(BUDGET + 1) });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toMatchObject({ message: 'Too many request bodies in progress' });
    expect(seen).toEqual([]);
    // The budget is given back: a body within it passes after.
    const ok = await fetch(`${gw.url}/buffered/ok`, { method: 'POST', body: 'x'.repeat(BUDGET) });
    expect(ok.status).toBe(200);
    await ok.text();
  });
});

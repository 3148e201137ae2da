/**
 * HTTP/2 on the TLS proxy as Kong serves it by default (ALPN h2 and
 * http/1.1): an h2 client is proxied over HTTP/2, an HTTP/1.1 client over
 * HTTPS is still answered, and both are bound by the listener's time-outs.
 */
import { connect as h2connect, type ClientHttp2Session } from 'node:http2';
import type { Server } from 'node:http';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { GatewayProxy } from '../../../src/gateway/proxy/gateway-proxy.js';
import { startProxyListeners, type ProxyListeners } from '../../../src/gateway/proxy/listeners.js';
import { generateCa, issueCertificate, type KeyAndCert } from '../../../src/tls/pki.js';
import { Agent } from 'undici';
import { emptyConfig, route, service, Snapshots, startUpstream, type Echo } from './harness.js';

describe('HTTP/2 on the TLS proxy', () => {
  let upstream: { server: Server; port: number };
  let proxy: GatewayProxy;
  let listeners: ProxyListeners;
  let ca: KeyAndCert;
  let origin: string;
  const snapshots = new Snapshots();

  beforeAll(async () => {
    upstream = await startUpstream();
    ca = generateCa({ commonName: 'H2 Test CA' });
    const cert = issueCertificate(ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1'], usage: 'server' });
    const c = emptyConfig();
    route(c, service(c, { host: '127.0.0.1', port: upstream.port, path: '/fhir' }), { paths: ['/api'] });
    snapshots.set(c);
    proxy = new GatewayProxy(snapshots.get);
    listeners = await startProxyListeners({
      proxy,
      https: { host: '127.0.0.1', port: 0, cert: cert.certPem, key: cert.keyPem },
      limits: { headersTimeoutMs: 500, requestTimeoutMs: 800, checkIntervalMs: 50 },
    });
    origin = `https://127.0.0.1:${listeners.https!.port}`;
  });
  afterAll(async () => {
    await listeners.close();
    await proxy.close();
    upstream.server.close();
  });

  function h2(): Promise<ClientHttp2Session> {
    return new Promise((resolve, reject) => {
      const s = h2connect(origin, { ca: ca.certPem });
      s.once('connect', () => resolve(s));
      s.once('error', reject);
    });
  }

  it('negotiates h2 and proxies the request (pseudo-headers never reach the upstream)', async () => {
    const session = await h2();
    try {
      expect(session.alpnProtocol).toBe('h2');
      const { status, headers, body } = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
        const req = session.request({ ':path': '/api/Patient?x=1', ':method': 'POST', 'content-type': 'application/json' });
        let body = '';
        let head: Record<string, unknown> = {};
        req.on('response', (h) => (head = h));
        req.setEncoding('utf8');
        req.on('data', (d: string) => (body += d));
        req.on('end', () => resolve({ status: Number(head[':status']), headers: head, body }));
        req.on('error', reject);
        req.end('{"resourceType":"Patient"}');
      });
      expect(status).toBe(200);
      expect(headers.via).toBe('1.1 kong/3.9.1');
      const echo = JSON.parse(body) as Echo;
      expect(echo.url).toBe('/fhir/Patient?x=1');
      expect(echo.method).toBe('POST');
      expect(echo.body).toBe('{"resourceType":"Patient"}');
      expect(echo.headers['x-forwarded-proto']).toBe('https');
      expect(echo.headers['x-forwarded-host']).toBe('127.0.0.1'); // from :authority
      expect(Object.keys(echo.headers).some((k) => k.startsWith(':'))).toBe(false);
    } finally {
      session.close();
    }
  });

  it('still answers HTTP/1.1 over TLS', async () => {
    const dispatcher = new Agent({ connect: { ca: ca.certPem } });
    try {
      const res = await request(`${origin}/api/metadata`, { dispatcher });
      const echo = (await res.body.json()) as Echo;
      expect(res.statusCode).toBe(200);
      expect(echo.url).toBe('/fhir/metadata');
    } finally {
      await dispatcher.close();
    }
  });

  it('cuts an h2 stream whose body trickles with 408', async () => {
    const session = await h2();
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = session.request({ ':path': '/api/x', ':method': 'POST' });
        const t = setInterval(() => req.write('x'), 100);
        req.on('response', (h) => {
          clearInterval(t);
          resolve(Number(h[':status']));
        });
        req.on('close', () => clearInterval(t));
        req.on('error', reject);
      });
      expect(status).toBe(408);
    } finally {
      session.close();
    }
  });

  it('cuts an HTTP/1.1 client that trickles its headers over TLS with 408', async () => {
    const out = await new Promise<string>((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port: listeners.https!.port, ca: ca.certPem, ALPNProtocols: ['http/1.1'] }, () => {
        s.write('GET /api/x HTTP/1.1\r\n');
        let i = 0;
        const t = setInterval(() => !s.destroyed && i++ < 40 && s.write('a'), 100);
        s.on('close', () => clearInterval(t));
      });
      let got = '';
      s.on('data', (d) => (got += d.toString('latin1')));
      s.on('error', () => undefined);
      s.on('close', () => resolve(got));
    });
    expect(out).toMatch(/^HTTP\/1\.1 408 /);
  });
});

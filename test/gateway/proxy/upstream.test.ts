/** Upstream errors (502/504), streaming both ways, the TLS listener and verified HTTPS upstreams (Kong's kong/error_handlers.lua, kong/runloop/handler.lua). */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../src/util/port-check.js';
import { makeTestPki, type TestPki } from '../../helpers/pki.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { emptyConfig, get, route, service, Snapshots, startProxy, type Echo } from './harness.js';

const MB = 1024 * 1024;

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('upstream behaviour', () => {
  let pki: TestPki;
  let gw: Awaited<ReturnType<typeof startProxy>>;
  const servers: Server[] = [];
  const snapshots = new Snapshots();
  const releaseResponse = deferred();
  const upstreamGotFirst = deferred();

  beforeAll(async () => {
    pki = makeTestPki(tempDir());
    const streamer = createServer((req, res) => {
      if (req.url === '/download') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.write(Buffer.alloc(1024, 1));
        void releaseResponse.promise.then(() => {
          for (let i = 0; i < 8; i++) res.write(Buffer.alloc(MB, 2));
          res.end();
        });
        return;
      }
      if (req.url?.endsWith('/hang')) return; // never answers
      let total = 0;
      req.on('data', (c: Buffer) => {
        total += c.length;
        upstreamGotFirst.resolve();
      });
      req.on('end', () => res.end(JSON.stringify({ total })));
    });
    const streamPort = await listen(streamer);
    const tlsUpstream = createHttpsServer({ cert: pki.server.certPem, key: pki.server.keyPem }, (req, res) => {
      res.end(JSON.stringify({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: '' } satisfies Echo));
    });
    const tlsPort = await listen(tlsUpstream as unknown as Server);
    servers.push(streamer, tlsUpstream as unknown as Server);

    const c = emptyConfig();
    const caId = randomUUID();
    const otherCaId = randomUUID();
    c.ca_certificates.push({ id: caId, created_at: 1, cert: pki.ca.certPem, cert_digest: 'x', tags: null });
    c.ca_certificates.push({ id: otherCaId, created_at: 1, cert: pki.otherCa.certPem, cert_digest: 'y', tags: null });
    const s = service(c, { host: '127.0.0.1', port: streamPort });
    route(c, s, { paths: ['/s'] });
    route(c, s, { paths: ['/s-streamed'], request_buffering: false });
    route(c, service(c, { host: '127.0.0.1', port: await freePort(), retries: 1 }), { paths: ['/refused'] });
    route(c, service(c, { host: '127.0.0.1', port: streamPort, read_timeout: 300 }), { paths: ['/slow'], strip_path: false });
    route(c, service(c, { protocol: 'https', host: '127.0.0.1', port: tlsPort, ca_certificates: [caId] }), { paths: ['/tls-good'] });
    route(c, service(c, { protocol: 'https', host: '127.0.0.1', port: tlsPort, ca_certificates: [otherCaId] }), { paths: ['/tls-wrong-ca'] });
    route(c, service(c, { protocol: 'https', host: '127.0.0.1', port: tlsPort }), { paths: ['/tls-system-roots'] });
    snapshots.set(c);
    gw = await startProxy(snapshots, { cert: pki.server.certPem, key: pki.server.keyPem });
  });
  afterAll(async () => {
    await gw.close();
    for (const s of servers) s.closeAllConnections?.(), s.close();
    removeTempDirs();
  });

  it('502 when the upstream refuses, as text/plain without Accept and JSON with it', async () => {
    const r = await get(`${gw.url}/refused`);
    expect(r.status).toBe(502);
    expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(r.text).toBe(`An invalid response was received from the upstream server\nrequest_id: ${r.headers['x-kong-request-id']}\n`);
    expect(r.headers.server).toBe('kong/3.9.1');
    const j = await get(`${gw.url}/refused`, { headers: { accept: 'application/json' } });
    expect(j.json().message).toBe('An invalid response was received from the upstream server');
  });

  it('504 when the upstream does not answer within read_timeout', async () => {
    const r = await get(`${gw.url}/slow/hang`, { headers: { accept: '*/*' } });
    expect([r.status, r.json().message]).toEqual([504, 'The upstream server is timing out']);
  });

  it('streams a large response without buffering it', async () => {
    const res = await request(`${gw.url}/s/download`);
    let total = 0;
    for await (const chunk of res.body) {
      // The upstream sends the rest only after we have seen the first bytes: a buffering proxy would deadlock here.
      if (total === 0) releaseResponse.resolve();
      total += (chunk as Buffer).length;
    }
    expect(total).toBe(1024 + 8 * MB);
  });

  it('streams a large request body without buffering it on a route with request_buffering false', async () => {
    async function* body() {
      yield Buffer.alloc(1024, 1);
      await upstreamGotFirst.promise; // only once the upstream has the first chunk
      for (let i = 0; i < 8; i++) yield Buffer.alloc(MB, 2);
    }
    const r = await get(`${gw.url}/s-streamed/upload`, { method: 'POST', body: Readable.from(body()) });
    expect(JSON.parse(r.text)).toEqual({ total: 1024 + 8 * MB });
  });

  it('serves HTTPS with the configured certificate, verified against the test CA', async () => {
    const dispatcher = new Agent({ connect: { ca: pki.ca.certPem } });
    const r = await get(`${gw.httpsUrl}/tls-good/x`, { dispatcher });
    expect(r.status).toBe(200);
    const e = r.json() as unknown as Echo;
    expect(e.headers['x-forwarded-proto']).toBe('https');
    await dispatcher.close();
  });

  it('verifies HTTPS upstreams against the service CA certificates', async () => {
    expect((await get(`${gw.url}/tls-good/y`)).status).toBe(200);
    expect((await get(`${gw.url}/tls-wrong-ca/y`)).status).toBe(502);
    expect((await get(`${gw.url}/tls-system-roots/y`)).status).toBe(502);
  });
});

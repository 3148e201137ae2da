/**
 * The FHIR door (src/fhir-door/) in front of a real upstream HTTP server on 127.0.0.1 standing in for
 * HAPI: metadata open, everything else only with the token (compared whole, whatever its length),
 * refusals never reach the upstream, bodies stream both ways, a response the upstream breaks off is
 * broken off to the caller, and no request target picks another host or climbs out of /fhir.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFhirDoor, type FhirDoor } from '../../src/fhir-door/server.js';
import { startCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';
import { answers } from '../../src/runtime/docker/hung-probe.js';

const TOKEN = 'door-token-for-tests-0123456789abcdef';

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  host: string | undefined;
}

let upstream: Server;
let upstreamPort: number;
let seen: Seen[] = [];
/** How the upstream answers a path; default: a small FHIR JSON body. */
let answer: (req: IncomingMessage, res: ServerResponse) => void;
let door: FhirDoor;
const logs: string[] = [];

function defaultAnswer(req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify({ resourceType: req.url?.startsWith('/fhir/metadata') ? 'CapabilityStatement' : 'Bundle' });
  res.writeHead(200, { 'content-type': 'application/fhir+json' }).end(req.method === 'HEAD' ? undefined : body);
}

beforeAll(async () => {
  upstream = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, host: req.headers.host });
    answer(req, res);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  upstreamPort = (upstream.address() as AddressInfo).port;
  door = await startFhirDoor({ host: '127.0.0.1', port: 0, upstream: `http://127.0.0.1:${upstreamPort}`, token: TOKEN, log: (l) => logs.push(l) });
});

afterEach(() => {
  seen = [];
  answer = defaultAnswer;
});

afterAll(async () => {
  await door.close();
  upstream.closeAllConnections();
  await new Promise<void>((r) => upstream.close(() => r()));
  // the token never reaches a log line
  expect(logs.join('\n')).not.toContain(TOKEN);
  removeTempDirs();
});

answer = defaultAnswer;

async function get(path: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' | 'DELETE' = 'GET') {
  const res = await request(`${door.url}${path}`, { method, headers });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

/** One request written as raw bytes (clients normalise `..` and never send the absolute form); the door's whole answer. */
async function raw(requestLine: string, headers: string[]): Promise<string> {
  const { port } = new URL(door.url);
  const socket = connect(Number(port), '127.0.0.1');
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('close', () => resolve());
    socket.write(`${requestLine}\r\n${headers.join('\r\n')}\r\nConnection: close\r\n\r\n`);
  });
  return text;
}

function outcomeCode(text: string): string | undefined {
  const body = JSON.parse(text) as { resourceType?: string; issue?: Array<{ details?: { text?: string } }> };
  expect(body.resourceType).toBe('OperationOutcome');
  return body.issue?.[0]?.details?.text;
}

describe('fhir door', () => {
  it('opens GET and HEAD /fhir/metadata to a caller without a token', async () => {
    const got = await get('/fhir/metadata');
    expect(got.status).toBe(200);
    expect(JSON.parse(got.text)).toEqual({ resourceType: 'CapabilityStatement' });
    expect((await get('/fhir/metadata?_format=json', {}, 'HEAD')).status).toBe(200);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual(['GET /fhir/metadata', 'HEAD /fhir/metadata?_format=json']);
  });

  it('refuses every other request without the right token, 401 with an OperationOutcome, and the upstream never sees it', async () => {
    const cases: Array<[string, Record<string, string>, 'GET' | 'DELETE']> = [
      ['/fhir/Patient', {}, 'GET'],
      ['/fhir/Patient', { authorization: `Bearer ${TOKEN.slice(0, -1)}x` }, 'GET'], // same length, last character wrong
      ['/fhir/Patient', { authorization: `Bearer ${TOKEN}extra` }, 'GET'], // another length
      ['/fhir/Patient', { authorization: 'Bearer short' }, 'GET'],
      ['/fhir/Patient', { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` }, 'GET'],
      ['/fhir/metadata', {}, 'DELETE'], // only reading the CapabilityStatement is open
      ['/fhir/metadata/x', {}, 'GET'],
    ];
    for (const [path, headers, method] of cases) {
      const got = await get(path, headers, method);
      expect(got.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
      expect(got.headers['www-authenticate']).toBe('Bearer realm="fhir"');
      expect(outcomeCode(got.text)).toBe('ERR_FHIR_DOOR_UNAUTHORIZED');
      expect(got.text).not.toContain(TOKEN);
    }
    expect(seen).toEqual([]);
  });

  it('forwards with the right token, streaming the request and the response, and keeps the token from the upstream', async () => {
    let upstreamGot = '';
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    answer = (req, res) => {
      res.writeHead(201, { 'content-type': 'application/fhir+json', location: 'http://x/fhir/Patient/1' });
      req.on('data', (d: Buffer) => {
        upstreamGot += d.toString();
        res.write(`[${d.toString()}]`);
      });
      req.on('end', () => void released.then(() => res.end('done')));
    };
    const { port } = new URL(door.url);
    const req = httpRequest({ host: '127.0.0.1', port: Number(port), method: 'POST', path: '/fhir/Patient?x=1', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/fhir+json' } });
    let clientGot = '';
    const response = new Promise<IncomingMessage>((resolve) => req.once('response', resolve));
    req.write('first');
    // the upstream reads the first part while the caller still holds the rest: the request streams
    await until(() => upstreamGot === 'first', { what: 'the upstream to read the first part' });
    const res = await response;
    expect(res.statusCode).toBe(201);
    expect(res.headers.location).toBe('http://x/fhir/Patient/1');
    res.on('data', (d: Buffer) => (clientGot += d.toString()));
    // and the caller reads the upstream's first answer while the upstream still holds the rest: the response streams
    await until(() => clientGot === '[first]', { what: 'the caller to read the first answer' });
    req.end('second');
    await until(() => clientGot === '[first][second]', { what: 'the second part both ways' });
    release();
    await new Promise<void>((r) => res.once('end', () => r()));
    expect(clientGot).toBe('[first][second]done');
    // the caller's Host goes on (HAPI's links name the address the caller used); the token does not
    expect(seen).toEqual([{ method: 'POST', url: '/fhir/Patient?x=1', authorization: undefined, host: `127.0.0.1:${port}` }]);
  });

  it('forwards a body sent with Expect: 100-continue (curl sends it for bodies over 1 KiB)', async () => {
    answer = (req, res) => {
      let n = 0;
      req.on('data', (d: Buffer) => (n += d.length));
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(String(n)));
    };
    const { port } = new URL(door.url);
    const got = await new Promise<string>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: Number(port), method: 'POST', path: '/fhir', headers: { authorization: `Bearer ${TOKEN}`, expect: '100-continue', 'content-length': '4096' } });
      req.on('continue', () => req.end('x'.repeat(4096)));
      req.on('response', (r) => {
        let text = `${r.statusCode} `;
        r.on('data', (d: Buffer) => (text += d.toString()));
        r.on('end', () => resolve(text));
      });
      req.on('error', reject);
    });
    expect(got).toBe('200 4096');
  });

  it('breaks a response off when the upstream breaks it off: the caller never sees it complete', async () => {
    for (const framing of ['chunked', 'content-length'] as const) {
      answer = (req, res) => {
        res.writeHead(200, { 'content-type': 'application/fhir+json', ...(framing === 'content-length' ? { 'content-length': '1000' } : {}) });
        // the upstream dies once the first part has left
        res.write('{"resourceType":"Bundle","entry":[', () => req.socket.destroy());
      };
      const res = await request(`${door.url}/fhir/Patient`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.statusCode, framing).toBe(200);
      await expect(res.body.text(), framing).rejects.toThrow();
    }
  });

  it('refuses the absolute form and any target outside /fhir or with a dot segment, before contacting the upstream', async () => {
    const auth = `Authorization: Bearer ${TOKEN}`;
    const targets = [
      'http://evil.example/fhir/Patient',
      `http://127.0.0.1:${upstreamPort}/fhir/Patient`,
      '/fhir/../admin',
      '/fhir/%2e%2e/admin',
      '/fhir/%2E./admin',
      '/fhir/./Patient',
      '/fhir/Patient/..',
      '/fhir/..%2fadmin',
      '/fhir%2f..%2fadmin',
      '/admin',
      '/fhirx/Patient',
      '//evil.example/fhir/Patient',
      '*',
    ];
    for (const target of targets) {
      const text = await raw(`GET ${target} HTTP/1.1`, ['Host: evil.example', auth]);
      expect(text, target).toMatch(/^HTTP\/1\.1 400 /);
      expect(outcomeCode(text.slice(text.indexOf('\r\n\r\n') + 4)), target).toBe('ERR_FHIR_DOOR_BAD_TARGET');
    }
    expect(seen).toEqual([]);
    // the same door still forwards a plain target with the same token
    expect((await raw('GET /fhir/Patient HTTP/1.1', ['Host: localhost', auth])).startsWith('HTTP/1.1 200 ')).toBe(true);
  });

  it('answers its hung probe (a target it refuses itself) while the upstream hangs: a hung HAPI never gets the door replaced', async () => {
    // the upstream takes the request and never answers, as a SIGSTOPped HAPI behind docker's network does
    const held: ServerResponse[] = [];
    answer = (_req, res) => void held.push(res);
    const hung = request(`${door.url}/fhir/metadata`, { headersTimeout: 60_000 }).then((r) => r.body.text()).catch(() => 'cut');
    await until(async () => held.length === 1, { what: 'the metadata request held by the upstream' });
    // templates/compose.yaml probes http://127.0.0.1:8080/ with hung-probe's own check
    expect(await answers(`${door.url}/`, 3_000)).toBe(true);
    const probed = await request(`${door.url}/`);
    expect(probed.statusCode).toBe(400);
    await probed.body.dump();
    expect(seen.map((s) => s.url)).toEqual(['/fhir/metadata']);
    for (const res of held) res.end();
    await hung;
  });

  it('answers 502 with an OperationOutcome when the upstream does not answer', async () => {
    const gone = createServer();
    await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
    const port = (gone.address() as AddressInfo).port;
    await new Promise<void>((r) => gone.close(() => r()));
    const lone = await startFhirDoor({ host: '127.0.0.1', port: 0, upstream: `http://127.0.0.1:${port}`, token: TOKEN, log: (l) => logs.push(l) });
    try {
      const res = await request(`${lone.url}/fhir/Patient`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.statusCode).toBe(502);
      expect(outcomeCode(await res.body.text())).toBe('ERR_FHIR_DOOR_UPSTREAM');
    } finally {
      await lone.close();
    }
  });

  it('runs as `hospital-api fhir door` from a token file', async () => {
    const dir = tempDir('fhir-door-');
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const child = startCli(['fhir', 'door', '--host', '127.0.0.1', '--port', '0', '--upstream', `http://127.0.0.1:${upstreamPort}`, '--token-file', tokenFile]);
    let err = '';
    child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
    try {
      const url = await until(() => /listening on (http:\/\/\S+),/.exec(err)?.[1], { what: 'the door to listen', timeoutMs: 30_000 });
      expect((await request(`${url}/fhir/metadata`)).statusCode).toBe(200);
      const refused = await request(`${url}/fhir/Patient`);
      expect(refused.statusCode).toBe(401);
      await refused.body.dump();
      const ok = await request(`${url}/fhir/Patient`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(ok.statusCode).toBe(200);
      await ok.body.dump();
    } finally {
      child.kill('SIGTERM');
      await child;
    }
    expect(err).not.toContain(TOKEN);
  });
});

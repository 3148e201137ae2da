/**
 * The admin-API call install runs inside the kong container (perl HTTP::Tiny,
 * since the official kong image has no curl), run here with the host's perl
 * against a real HTTP server on 127.0.0.1: method, JSON body on stdin, status
 * and body back, a refused connection as ERR_INSTALL_ADMIN_UNREACHABLE's exit 3.
 */
import { createServer, type Server } from 'node:http';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAdminOutput, PERL_ADMIN_CALL } from '../../../src/runtime/docker/admin.js';
import { freePort } from '../../../src/util/port-check.js';

const hasPerl = (await execa('perl', ['-MHTTP::Tiny', '-e', '1'], { reject: false })).exitCode === 0;
let server: Server;
let base = '';
const seen: Array<{ method: string; url: string; type: string | undefined; body: string }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, type: req.headers['content-type'], body });
      res.writeHead(req.url === '/missing' ? 404 : 201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ echo: body ? JSON.parse(body) : null, message: req.url === '/missing' ? 'Not found' : 'ok' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const call = (method: string, url: string, body?: unknown) =>
  execa('perl', ['-MHTTP::Tiny', '-e', PERL_ADMIN_CALL, method, url], { reject: false, input: body === undefined ? '' : JSON.stringify(body) });

describe.skipIf(!hasPerl)('admin call through perl HTTP::Tiny', () => {
  it('sends the method and the JSON body, returns status and JSON body', async () => {
    const body = { name: 'fhir-api', config: { key_names: ['apikey'], note: 'a "quoted" $HOME \\ value' } };
    const res = await call('PUT', `${base}/services/fhir-api`, body);
    expect(res.exitCode).toBe(0);
    expect(parseAdminOutput(String(res.stdout))).toEqual({ status: 201, body: { echo: body, message: 'ok' } });
    expect(seen.at(-1)).toEqual({ method: 'PUT', url: '/services/fhir-api', type: 'application/json', body: JSON.stringify(body) });
  });

  it('sends no body and no content type on a GET; passes a 404 through', async () => {
    const res = await call('GET', `${base}/missing`);
    expect(parseAdminOutput(String(res.stdout))).toEqual({ status: 404, body: { echo: null, message: 'Not found' } });
    expect(seen.at(-1)).toMatchObject({ method: 'GET', type: undefined, body: '' });
  });

  it('exits 3 with the reason when nothing listens', async () => {
    const res = await call('GET', `http://127.0.0.1:${await freePort()}/status`);
    expect(res.exitCode).toBe(3);
    const out = parseAdminOutput(String(res.stdout));
    expect(out.status).toBe(599);
    expect(String(out.body)).toMatch(/connect|refused/i);
  });
});

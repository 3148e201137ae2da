/**
 * The admin-API call install runs inside the kong container (perl HTTP::Tiny,
 * since the official kong image has no curl), run here with the host's perl
 * against a real HTTP server on 127.0.0.1: method, JSON body on stdin, status
 * and body back, a refused connection as ERR_INSTALL_ADMIN_UNREACHABLE's exit 3;
 * and a stdin whose end never comes (an engine that lost its close) waits for nothing.
 */
import { createServer, type Server } from 'node:http';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminExecArgs, parseAdminOutput, PERL_ADMIN_CALL } from '../../../src/runtime/container/admin.js';
import { freePort } from '../../../src/util/port-check.js';
import { runWithOpenStdin, type OpenStdinResult } from '../../helpers/open-stdin.js';

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

/** The script's perl argv for `url` and a body of `length` bytes. */
const perlArgs = (method: string, url: string, length: number | string) => ['-MHTTP::Tiny', '-e', PERL_ADMIN_CALL, method, url, String(length)];

/** As `docker exec` runs it (adminExecArgs), with the host's perl and this server's URL. */
const call = (method: string, url: string, body?: unknown) => {
  const { args, input } = adminExecArgs('kong', method, '/x', body);
  return execa('perl', perlArgs(method, url, args.at(-1)!), { reject: false, ...(input === undefined ? { stdin: 'ignore' } : { input }) });
};

/** The script with a stdin that never ends after `written` (runWithOpenStdin). */
const callWithOpenStdin = (method: string, url: string, length: number, written: string): Promise<OpenStdinResult> =>
  runWithOpenStdin('perl', perlArgs(method, url, length), written);

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

  it('answers without waiting for the end of its input: none with no body, the announced bytes with one', async () => {
    const get = await callWithOpenStdin('GET', `${base}/missing`, 0, '');
    expect(get).not.toBe('hung');
    expect(parseAdminOutput((get as { stdout: string }).stdout).status).toBe(404);
    const body = JSON.stringify({ name: 'café' });
    const put = await callWithOpenStdin('PUT', `${base}/services/x`, Buffer.byteLength(body), body);
    expect(put).not.toBe('hung');
    expect(parseAdminOutput((put as { stdout: string }).stdout)).toEqual({ status: 201, body: { echo: { name: 'café' }, message: 'ok' } });
    expect(seen.at(-1)).toMatchObject({ method: 'PUT', body });
  });

  it('sends nothing when the body is cut short (exit 4)', async () => {
    const before = seen.length;
    const child = await execa('perl', perlArgs('PUT', `${base}/services/x`, 100), { reject: false, input: '{"name":"x"}' });
    expect(child.exitCode).toBe(4);
    expect(seen.length).toBe(before);
  });

  it('exits 3 with the reason when nothing listens', async () => {
    const res = await call('GET', `http://127.0.0.1:${await freePort()}/status`);
    expect(res.exitCode).toBe(3);
    const out = parseAdminOutput(String(res.stdout));
    expect(out.status).toBe(599);
    expect(String(out.body)).toMatch(/connect|refused/i);
  });
});

describe('admin call arguments', () => {
  it('attaches no stdin to a call without a body, and passes a body on stdin only, with its length in bytes', () => {
    expect(adminExecArgs('c1', 'GET', '/services')).toEqual({ args: ['exec', 'c1', 'perl', '-MHTTP::Tiny', '-e', PERL_ADMIN_CALL, 'GET', 'http://127.0.0.1:8001/services', '0'] });
    const secret = { key: 'clé-secrète' };
    const put = adminExecArgs('c1', 'POST', '/consumers/h/key-auth', secret);
    expect(put.args.slice(0, 3)).toEqual(['exec', '-i', 'c1']);
    expect(put.args.at(-1)).toBe(String(Buffer.byteLength(JSON.stringify(secret))));
    expect(put.args.join(' ')).not.toContain('secr');
    expect(put.input).toBe(JSON.stringify(secret));
  });
});

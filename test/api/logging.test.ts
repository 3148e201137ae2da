/**
 * What the Hospital API writes to its log (Fastify's pino logger, as `serve`
 * runs it): readiness and liveness probes leave no request lines at info level
 * (they come every few seconds), a record cut mid-stream and a reply replaced
 * because the audit log failed are logged with their error code, and no token
 * or FHIR key ever appears in the log.
 */
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { loadConfig } from '../../src/api/server/config.js';
import { startApi, type RunningApi } from '../../src/api/server/server.js';
import { tempDir } from '../helpers/tmp.js';
import { API_KEY, TOKEN_OK, defaultPlatform, testPki } from './harness.js';
import { makeRecord, startFhirStandIn, startPlatform, type FhirOptions, type StandIn } from './stand-ins.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function logged(options: { env?: Record<string, string>; fhir?: Partial<FhirOptions>; platform?: Parameters<typeof startPlatform>[0] } = {}): Promise<{ url: string; logs: Array<Record<string, unknown>>; text: () => string; running: RunningApi; platform: StandIn }> {
  const { pki } = testPki();
  const platform: StandIn = await startPlatform(options.platform ?? defaultPlatform);
  const fhir = await startFhirStandIn({ tls: pki.server, apiKey: API_KEY, patients: { 'care-1': ['p1'] }, records: { p1: makeRecord('p1', 3) }, ...options.fhir });
  open.push(platform, fhir);
  const dir = tempDir('hapi-api-log-');
  const config = loadConfig({ host: '127.0.0.1', port: 0 }, {
    PLATFORM_API_URL: platform.url, FHIR_BASE_URL: fhir.url, FHIR_API_KEY: API_KEY, FHIR_CA_FILE: pki.files.ca,
    AUDIT_LOG: join(dir, 'audit.log'), METRICS_LISTEN: 'off', PLATFORM_ANY_IDENTIFIER_SYSTEM: 'true', ...options.env,
  }, dir);
  const raw: string[] = [];
  const running = await startApi(config, { logger: { level: 'info', stream: { write: (line: string) => void raw.push(line) } } });
  open.push({ close: () => running.stop() });
  const logs = () => raw.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { url: running.url, get logs() { return logs(); }, text: () => raw.join(''), running, platform };
}

const post = (url: string, body: unknown) =>
  request(`${url}/api/patients`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('API log', () => {
  it('leaves no request lines for /api/health-check and /api/ready at info level; patient requests are logged, without the token', async () => {
    const api = await logged();
    for (const path of ['/api/health-check', '/api/ready', '/api/health-check']) await (await request(`${api.url}${path}`)).body.dump();
    await (await post(api.url, { platformCareId: 'care-1', token: TOKEN_OK })).body.dump();
    const urls = api.logs.map((l) => (l.req as { url?: string } | undefined)?.url).filter(Boolean);
    expect(urls).toContain('/api/patients'); // the capture works
    expect(urls.filter((u) => u !== '/api/patients')).toEqual([]);
    expect(api.text()).not.toContain(TOKEN_OK.slice(7));
    expect(api.text()).not.toContain(API_KEY);
  });

  it('logs a record cut mid-stream with its error code', async () => {
    const api = await logged({ fhir: { records: { p1: makeRecord('p1', 30) }, maxPageSize: 10, failPage: { page: 2, mode: 'status' } } });
    const res = await post(api.url, { platformCareId: 'care-1', token: TOKEN_OK });
    await res.body.text().catch(() => undefined);
    for (let i = 0; i < 100 && !api.logs.some((l) => l.msg === 'record aborted mid-stream'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(api.logs.find((l) => l.msg === 'record aborted mid-stream')).toMatchObject({ level: 50, code: 'ERR_API_FHIR_UNAVAILABLE' });
  });

  it('logs a reply replaced because its audit line could not be written', async () => {
    const api = await logged({ env: { AUDIT_LOG: '/dev/full' } });
    const res = await post(api.url, { platformCareId: 'care-1', token: TOKEN_OK });
    expect(res.statusCode).toBe(503);
    await res.body.dump();
    expect(api.logs.find((l) => l.msg === 'audit line not written: reply replaced')).toMatchObject({ level: 50, code: 'ERR_API_AUDIT_UNAVAILABLE' });
  });

  it('logs a caller that left when its end line could not be written either', async () => {
    const api = await logged({ env: { AUDIT_LOG: '/dev/full' }, platform: (auth) => ({ ...defaultPlatform(auth), delayMs: 300 }) });
    const u = new URL(api.url);
    const socket = connect(Number(u.port), u.hostname);
    socket.on('error', () => undefined);
    const body = JSON.stringify({ platformCareId: 'care-1', token: TOKEN_OK });
    socket.write(`POST /api/patients HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    for (let i = 0; i < 200 && api.platform.seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    socket.destroy();
    for (let i = 0; i < 100 && !api.logs.some((l) => l.msg === 'audit line not written'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(api.logs.find((l) => l.msg === 'audit line not written')).toMatchObject({
      level: 50,
      code: 'ERR_API_AUDIT_UNAVAILABLE',
      // The operator's log names the file; the message (which callers get too) does not.
      auditLog: '/dev/full',
      message: expect.stringContaining('ENOSPC'),
    });
  });

  it('logs a caller cut for not reading with the time it was given', async () => {
    const api = await logged({ env: { SEND_TIMEOUT_MS: '700', FHIR_PAGE_SIZE: '1000' }, fhir: { records: { p1: makeRecord('p1', 30_000) } } });
    const u = new URL(api.url);
    const socket = connect(Number(u.port), u.hostname);
    socket.on('error', () => undefined);
    socket.pause(); // never reads
    const body = JSON.stringify({ platformCareId: 'care-1', token: TOKEN_OK });
    socket.write(`POST /api/patients HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    for (let i = 0; i < 300 && !api.logs.some((l) => l.msg === 'record aborted mid-stream'); i++) await new Promise((r) => setTimeout(r, 20));
    socket.destroy();
    expect(api.logs.find((l) => l.msg === 'record aborted mid-stream')).toMatchObject({
      code: 'ERR_API_CLIENT_STALLED',
      message: 'The caller did not read the response for 700 ms; connection cut',
    });
  });
});

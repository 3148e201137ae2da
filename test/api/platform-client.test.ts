/**
 * The platform's validate-access call, talked to directly over real HTTP on
 * 127.0.0.1 (issue 11, mutation testing): what the platform receives, which
 * answers grant access, and how each failure is reported. A status that is not
 * a 2xx never grants access; the token never appears in an error.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createPlatformClient, type PlatformClient } from '../../src/api/platform/platform-client.js';
import type { ApiConfig } from '../../src/api/server/config.js';

const TOKEN = 'Bearer platform-token-93be1f';
interface Seen { method: string; url: string; headers: IncomingMessage['headers']; body: string }
let seen: Seen[] = [];
let answer: (req: IncomingMessage, res: ServerResponse) => void;
let server: Server;
let port = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += String(c); });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      answer(req, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});
beforeEach(() => {
  seen = [];
  answer = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
});

const clients: PlatformClient[] = [];
afterAll(async () => { for (const c of clients) await c.close().catch(() => {}); });

function client(options: { path?: string; method?: 'GET' | 'POST'; timeoutMs?: number } = {}): PlatformClient {
  const config = {
    platformApiUrl: new URL(`http://127.0.0.1:${port}${options.path ?? '/'}`),
    platformValidateMethod: options.method ?? 'GET',
    platformCa: null,
    platformTimeoutMs: options.timeoutMs ?? 5_000,
  } as ApiConfig;
  const c = createPlatformClient(config);
  clients.push(c);
  return c;
}

async function failure(p: Promise<unknown>): Promise<{ code: string; message: string; cause?: unknown }> {
  try {
    await p;
  } catch (err) {
    expect(String((err as Error).message)).not.toContain(TOKEN);
    return err as { code: string; message: string; cause?: unknown };
  }
  throw new Error('expected a failure');
}

const reply = (status: number, body = '', type = 'application/json') => (_req: IncomingMessage, res: ServerResponse) =>
  res.writeHead(status, { 'content-type': type }).end(body);

describe('validate-access request', () => {
  it('GET: sends the token unchanged as Authorization, asks for JSON, sends no body', async () => {
    await client().validateAccess(TOKEN, 'care-1');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'GET', url: '/validate-access', body: '' });
    expect(seen[0]!.headers.authorization).toBe(TOKEN);
    expect(seen[0]!.headers.accept).toBe('application/json');
    expect(seen[0]!.headers['content-type']).toBeUndefined();
  });

  it('POST: sends the care id as a JSON body', async () => {
    await client({ method: 'POST' }).validateAccess(TOKEN, 'care-2');
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/validate-access', body: '{"platformCareId":"care-2"}' });
    expect(seen[0]!.headers['content-type']).toBe('application/json');
  });

  it('joins PLATFORM_API_URL and /validate-access once, whatever trailing slashes the URL has', async () => {
    await client({ path: '/platform//' }).validateAccess(TOKEN, 'care-1');
    await client({ path: '/platform' }).validateAccess(TOKEN, 'care-1');
    expect(seen.map((s) => s.url)).toEqual(['/platform/validate-access', '/platform/validate-access']);
  });
});

describe('validate-access answers', () => {
  it.each([401, 403])('%i denies access and says what the platform answered', async (status) => {
    answer = reply(status);
    const err = await failure(client().validateAccess(TOKEN, 'care-1'));
    expect([err.code, err.message]).toEqual(['ERR_API_ACCESS_DENIED', `Access denied: validate-access answered ${status}`]);
  });

  it.each([400, 404, 499])('%i is a credentials problem on our side, named with its status', async (status) => {
    answer = reply(status);
    const err = await failure(client().validateAccess(TOKEN, 'care-1'));
    expect([err.code, err.message]).toEqual(['ERR_API_UPSTREAM_CREDENTIALS', `Incomplete upstream credentials: validate-access answered ${status}`]);
  });

  it.each([500, 503, 300, 302, 304])('%i never grants access', async (status) => {
    answer = (_req, res) => res.writeHead(status, status === 302 ? { location: '/elsewhere' } : {}).end();
    const err = await failure(client().validateAccess(TOKEN, 'care-1'));
    expect([err.code, err.message]).toEqual(['ERR_API_PLATFORM_UNAVAILABLE', `Platform validate-access failed: validate-access answered ${status}`]);
  });

  it('grants a 2xx that names the same care id, no care id, or is not JSON', async () => {
    const c = client();
    answer = reply(200, '{"platformCareId":"care-1"}');
    await c.validateAccess(TOKEN, 'care-1');
    answer = reply(200, '{"ok":true}');
    await c.validateAccess(TOKEN, 'care-1');
    answer = reply(204, '');
    await c.validateAccess(TOKEN, 'care-1');
    // Only a JSON reply is read for the care id: a text reply is the platform's free text, not a grant for another patient.
    answer = reply(200, '{"platformCareId":"care-9"}', 'text/plain');
    await c.validateAccess(TOKEN, 'care-1');
    answer = reply(200, 'null');
    await c.validateAccess(TOKEN, 'care-1');
  });

  it('denies a JSON reply that grants another care id', async () => {
    answer = reply(200, '{"platformCareId":"care-9"}', 'application/fhir+json; charset=utf-8');
    const err = await failure(client().validateAccess(TOKEN, 'care-1'));
    expect([err.code, err.message]).toEqual(['ERR_API_ACCESS_DENIED', 'Access denied: the token was granted for another platformCareId']);
  });
});

describe('validate-access failures', () => {
  it('a platform that does not answer in PLATFORM_TIMEOUT_MS is a time-out naming the limit', async () => {
    answer = () => {}; // never answers
    const err = await failure(client({ timeoutMs: 300 }).validateAccess(TOKEN, 'care-1'));
    expect([err.code, err.message]).toEqual(['ERR_API_PLATFORM_TIMEOUT', 'Platform validate-access did not answer within 300 ms']);
    expect(err.cause).toBeDefined();
  });

  it('a reply whose body stalls past PLATFORM_TIMEOUT_MS is a time-out too', async () => {
    answer = (_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.write('{"platform'); };
    const err = await failure(client({ timeoutMs: 300 }).validateAccess(TOKEN, 'care-1'));
    expect([err.code, err.message]).toEqual(['ERR_API_PLATFORM_TIMEOUT', 'Platform validate-access did not answer within 300 ms']);
    expect(err.cause).toBeDefined();
  });

  it('a reply cut off mid-body is unreadable, not a grant', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"platformCareId":', () => res.socket?.destroy());
    };
    const err = await failure(client().validateAccess(TOKEN, 'care-1'));
    expect([err.code, err.message]).toEqual(['ERR_API_PLATFORM_UNAVAILABLE', 'Platform validate-access failed: unreadable reply']);
    expect(err.cause).toBeDefined();
  });

  it('a reply over 64 KB is refused as unreadable', async () => {
    answer = reply(200, JSON.stringify({ platformCareId: 'care-1', pad: 'x'.repeat(70 * 1024) }));
    const err = await failure(client().validateAccess(TOKEN, 'care-1'));
    expect([err.code, err.message]).toEqual(['ERR_API_PLATFORM_UNAVAILABLE', 'Platform validate-access failed: unreadable reply']);
  });

  it('a platform that refuses connections is unavailable, with the network error named', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const c = createPlatformClient({ platformApiUrl: new URL(`http://127.0.0.1:${deadPort}/`), platformValidateMethod: 'GET', platformCa: null, platformTimeoutMs: 2_000 } as ApiConfig);
    clients.push(c);
    const err = await failure(c.validateAccess(TOKEN, 'care-1'));
    expect([err.code, err.message]).toEqual(['ERR_API_PLATFORM_UNAVAILABLE', 'Platform validate-access failed: ECONNREFUSED']);
    expect(err.cause).toBeDefined();
  });

  it('after close() the client sends nothing', async () => {
    const c = client();
    await c.close();
    await failure(c.validateAccess(TOKEN, 'care-1'));
    expect(seen).toHaveLength(0);
  });
});

describe('readiness ping', () => {
  it('asks GET /validate-access for JSON, without a token, and passes on any answer below 500', async () => {
    const c = client();
    for (const status of [200, 401, 404, 499]) {
      answer = reply(status);
      await c.ping();
    }
    expect(seen.map((s) => `${s.method} ${s.url} ${s.headers.accept} ${s.headers.authorization}`)).toEqual(Array(4).fill('GET /validate-access application/json undefined'));
  });

  it.each([500, 502])('fails on %i, naming it', async (status) => {
    answer = reply(status);
    const err = await failure(client().ping());
    expect([err.code, err.message]).toEqual(['ERR_API_PLATFORM_UNAVAILABLE', `Platform validate-access failed: answered ${status}`]);
  });

  it('is bounded by the time-out it is given', async () => {
    answer = () => {};
    const err = await failure(client({ timeoutMs: 5_000 }).ping(200));
    expect([err.code, err.message]).toEqual(['ERR_API_PLATFORM_TIMEOUT', 'Platform validate-access did not answer within 200 ms']);
  });
});

/**
 * The FHIR client talked to directly over real HTTP on 127.0.0.1 (issue 11,
 * mutation testing): what the FHIR server receives, how patient search and
 * $everything walk pages, where the record limits fall, and how each failure
 * is reported. The key goes only to FHIR_BASE_URL and never into an error.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFhirClient, type EverythingStats, type FhirClient } from '../../src/api/fhir/fhir-client.js';
import type { ApiConfig } from '../../src/api/server/config.js';
import { fhirAccessOf } from '../../src/api/fhir/fhir-access.js';
import { removeTempDirs } from '../helpers/tmp.js';
import { testPki } from './harness.js';

const idsOf = (matches: Array<{ id: string }>): string[] => matches.map((m) => m.id);

const KEY = 'fhir-key-5be0c1d2';
interface Seen { url: string; headers: IncomingMessage['headers'] }
let seen: Seen[] = [];
let answer: (req: IncomingMessage, res: ServerResponse) => void;
let server: Server;
let origin = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    answer(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
const clients: FhirClient[] = [];
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  removeTempDirs();
});
beforeEach(() => {
  seen = [];
});

function client(overrides: Partial<ApiConfig> = {}): FhirClient {
  const config = {
    fhirBaseUrl: new URL(`${origin}/fhir`),
    fhirApiKey: KEY,
    fhirCa: null,
    fhirTimeoutMs: 5_000,
    fhirPageSize: 50,
    identifierSystem: null,
    maxPages: 10,
    maxResources: 1000,
    fhirMaxPageBytes: 1024 * 1024,
    ...overrides,
  } as ApiConfig;
  const c = createFhirClient(config);
  clients.push(c);
  return c;
}

interface Entry { type?: string; id: string; mode?: string; fullUrl?: string | null }
function bundle(entries: Entry[], next?: string, self?: string): string {
  const link = [...(self ? [{ relation: 'self', url: self }] : []), ...(next ? [{ relation: 'next', url: next }] : [])];
  return JSON.stringify({
    resourceType: 'Bundle', type: 'searchset', link,
    entry: entries.map((e) => ({
      ...(e.fullUrl === null ? {} : { fullUrl: e.fullUrl ?? `${origin}/fhir/${e.type ?? 'Patient'}/${e.id}` }),
      resource: { resourceType: e.type ?? 'Patient', id: e.id },
      ...(e.mode ? { search: { mode: e.mode } } : {}),
    })),
  });
}

/** Answers each path+query from `pages` (FHIR JSON, 200), anything else 404. */
function serve(pages: Record<string, string>): void {
  answer = (req, res) => {
    const body = pages[req.url ?? ''];
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'application/fhir+json' }).end(body);
  };
}

async function failure(p: Promise<unknown>): Promise<{ code: string; message: string; cause?: unknown }> {
  try {
    await p;
  } catch (err) {
    expect(String((err as Error).message)).not.toContain(KEY);
    return err as { code: string; message: string; cause?: unknown };
  }
  throw new Error('expected a failure');
}

async function everything(c: FhirClient, id = 'p1'): Promise<{ stats: EverythingStats; pages: Array<{ count: number; ids: string[] }> }> {
  const stats = { pages: 0, resources: 0 };
  const pages: Array<{ count: number; ids: string[] }> = [];
  await c.everything(id, async (bytes, count) => {
    const entries = JSON.parse(`[${bytes.toString('utf8')}]`) as Array<{ resource: { resourceType: string; id: string } }>;
    pages.push({ count, ids: entries.map((e) => `${e.resource.resourceType}/${e.resource.id}`) });
  }, stats);
  return { stats, pages };
}

describe('patient search', () => {
  it('asks FHIR_BASE_URL/Patient for the escaped identifier (with its system), 2 at most, with the key and no cached result', async () => {
    serve({ '/fhir/Patient?identifier=urn%3Asys%7Ccare%5C%2C1&_count=2': bundle([{ id: 'p1', mode: 'match' }]) });
    expect(await client({ identifierSystem: 'urn:sys' }).findPatients('care,1').then(idsOf)).toEqual(['p1']);
    expect(seen[0]!.headers).toMatchObject({ apikey: KEY, accept: 'application/fhir+json', 'cache-control': 'no-cache' });
  });

  it('joins a base written with trailing slashes once', async () => {
    serve({ '/fhir/Patient?identifier=c1&_count=2': bundle([]) });
    expect(await client({ fhirBaseUrl: new URL(`${origin}/fhir//`) }).findPatients('c1').then(idsOf)).toEqual([]);
    expect(seen.map((s) => s.url)).toEqual(['/fhir/Patient?identifier=c1&_count=2']);
  });

  it('follows next links past an empty first page, and stops as soon as two patients are known', async () => {
    serve({
      '/fhir/Patient?identifier=c1&_count=2': bundle([], `${origin}/fhir?_getpages=s&_getpagesoffset=2`),
      '/fhir?_getpages=s&_getpagesoffset=2': bundle([{ id: 'p1' }, { id: 'p2' }], `${origin}/fhir?_getpages=s&_getpagesoffset=4`),
      '/fhir?_getpages=s&_getpagesoffset=4': bundle([{ id: 'p3' }]),
    });
    expect(await client().findPatients('c1').then(idsOf)).toEqual(['p1', 'p2']);
    expect(seen).toHaveLength(2);
  });

  it('re-bases search next links from the self link HAPI writes with its internal address', async () => {
    serve({
      '/fhir/Patient?identifier=c1&_count=2': bundle([], 'http://hapi:8080/fhir?_getpages=s&o=2', 'http://hapi:8080/fhir/Patient?identifier=c1&_count=2'),
      '/fhir?_getpages=s&o=2': bundle([{ id: 'p1' }]),
    });
    expect(await client().findPatients('c1').then(idsOf)).toEqual(['p1']);
    expect(seen.map((s) => s.url)).toEqual(['/fhir/Patient?identifier=c1&_count=2', '/fhir?_getpages=s&o=2']);
  });

  it('counts only matched Patients: not included or outcome entries, not other resource types', async () => {
    serve({
      '/fhir/Patient?identifier=c1&_count=2': bundle([
        { id: 'p1', mode: 'match' }, { id: 'p2', mode: 'include' }, { id: 'p3', mode: 'outcome' },
        { type: 'Organization', id: 'o1', mode: 'match' },
      ]),
    });
    expect(await client().findPatients('c1').then(idsOf)).toEqual(['p1']);
  });

  it('reads at most MAX_PAGES pages of search results', async () => {
    serve({
      '/fhir/Patient?identifier=c1&_count=2': bundle([], `${origin}/fhir?_getpages=s&o=1`),
      '/fhir?_getpages=s&o=1': bundle([], `${origin}/fhir?_getpages=s&o=2`),
      '/fhir?_getpages=s&o=2': bundle([{ id: 'p9' }]),
    });
    expect(await client({ maxPages: 2 }).findPatients('c1').then(idsOf)).toEqual([]);
    expect(seen).toHaveLength(2);
  });

  it.each(['..', '.', 'a/b', 'x'.repeat(65), 'a_b'])('refuses a Patient id that is not a FHIR id (%s)', async (id) => {
    serve({ '/fhir/Patient?identifier=c1&_count=2': bundle([{ id, fullUrl: null }]) });
    const err = await failure(client().findPatients('c1'));
    expect([err.code, err.message]).toEqual(['ERR_API_FHIR_BAD_RESPONSE', 'FHIR server sent an unusable response: invalid Patient id']);
  });

  it('accepts ids at the edges of the grammar', async () => {
    serve({ '/fhir/Patient?identifier=c1&_count=2': bundle([{ id: 'A-z.0' }, { id: '.x' }]) });
    expect(await client().findPatients('c1').then(idsOf)).toEqual(['A-z.0', '.x']);
    serve({ '/fhir/Patient?identifier=c1&_count=2': bundle([{ id: 'x.' }]) });
    expect(await client().findPatients('c1').then(idsOf)).toEqual(['x.']);
    serve({ '/fhir/Patient?identifier=c1&_count=2': bundle([{ id: 'x'.repeat(64) }]) });
    expect(await client().findPatients('c1').then(idsOf)).toEqual(['x'.repeat(64)]);
  });
});

describe('$everything', () => {
  const first = '/fhir/Patient/p1/$everything?_count=50';

  it('asks for FHIR_PAGE_SIZE entries a page and hands each page to the sink in order, repeated includes dropped', async () => {
    serve({
      [first]: bundle([{ id: 'p1' }, { type: 'Organization', id: 'o1' }], `${origin}/fhir?_getpages=e&o=2`),
      '/fhir?_getpages=e&o=2': bundle([{ type: 'Organization', id: 'o1' }, { type: 'Observation', id: 'b1' }, { type: 'Observation', id: 'b2' }], `${origin}/fhir?_getpages=e&o=4`),
      '/fhir?_getpages=e&o=4': bundle([{ type: 'Organization', id: 'o1' }]),
    });
    const { stats, pages } = await everything(client());
    expect(pages).toEqual([
      { count: 2, ids: ['Patient/p1', 'Organization/o1'] },
      { count: 2, ids: ['Observation/b1', 'Observation/b2'] },
      { count: 0, ids: [] },
    ]);
    expect(stats).toEqual({ pages: 3, resources: 4 });
    expect(seen[0]!.headers).toMatchObject({ apikey: KEY, accept: 'application/fhir+json' });
  });

  it('keeps entries without a fullUrl or id (nothing to tell repeats by)', async () => {
    const page = JSON.stringify({ resourceType: 'Bundle', type: 'searchset', entry: [{ resource: { resourceType: 'Basic' } }, { resource: { resourceType: 'Basic' } }] });
    serve({ [first]: page });
    const { stats, pages } = await everything(client());
    expect(pages.map((p) => p.count)).toEqual([2]);
    expect(stats.resources).toBe(2);
  });

  it('re-bases next links from the self link HAPI writes with its internal address', async () => {
    serve({
      [first]: bundle([{ id: 'p1' }], 'http://hapi:8080/fhir?_getpages=e&o=1', 'http://hapi:8080/fhir/Patient/p1/$everything'),
      '/fhir?_getpages=e&o=1': bundle([{ type: 'Observation', id: 'b1' }]),
    });
    const { stats } = await everything(client());
    expect(stats).toEqual({ pages: 2, resources: 2 });
  });

  it('allows exactly MAX_PAGES pages and MAX_RESOURCES resources, and refuses one more of either', async () => {
    const pages = {
      [first]: bundle([{ id: 'p1' }, { type: 'Observation', id: 'b1' }], `${origin}/fhir?_getpages=e&o=2`),
      '/fhir?_getpages=e&o=2': bundle([{ type: 'Observation', id: 'b2' }]),
    };
    serve(pages);
    expect((await everything(client({ maxPages: 2, maxResources: 3 }))).stats).toEqual({ pages: 2, resources: 3 });
    const tooMany = await failure(everything(client({ maxResources: 2 })));
    expect([tooMany.code, tooMany.message]).toEqual(['ERR_API_RECORD_TOO_LARGE', expect.stringContaining('MAX_RESOURCES')]);
    expect(tooMany.message).toContain('2');
    const tooLong = await failure(everything(client({ maxPages: 1 })));
    expect([tooLong.code, tooLong.message]).toEqual(['ERR_API_RECORD_TOO_LARGE', expect.stringContaining('MAX_PAGES')]);
  });

  it('does not fetch past MAX_PAGES', async () => {
    serve({
      [first]: bundle([{ id: 'p1' }], `${origin}/fhir?_getpages=e&o=1`),
      '/fhir?_getpages=e&o=1': bundle([{ type: 'Observation', id: 'b1' }], `${origin}/fhir?_getpages=e&o=2`),
    });
    await failure(everything(client({ maxPages: 1 })));
    expect(seen).toHaveLength(1);
  });

  it('refuses a page larger than FHIR_MAX_PAGE_BYTES', async () => {
    serve({ [first]: bundle(Array.from({ length: 50 }, (_, i) => ({ type: 'Observation', id: `b${i}` }))) });
    const err = await failure(everything(client({ fhirMaxPageBytes: 1024 })));
    expect([err.code, err.message]).toEqual(['ERR_API_RECORD_TOO_LARGE', expect.stringContaining('FHIR_MAX_PAGE_BYTES')]);
    expect(err.message).toContain('1024');
  });
});

describe('failures', () => {
  it('a status other than 200 is unavailable, naming the path and status (not the query)', async () => {
    serve({});
    const err = await failure(client().findPatients('c1'));
    expect([err.code, err.message]).toEqual(['ERR_API_FHIR_UNAVAILABLE', 'FHIR request failed: /fhir/Patient answered 404']);
    answer = (_req, res) => res.writeHead(201, { 'content-type': 'application/fhir+json' }).end(bundle([{ id: 'p1' }]));
    expect((await failure(client().findPatients('c1'))).message).toContain('/fhir/Patient answered 201');
  });

  it('a connection closed before any answer (a gateway task replaced mid-request) is retried once on a new connection; twice is unavailable; an answer is never retried (issue 48)', async () => {
    const ok = bundle([{ id: 'p1', mode: 'match' }]);
    let requests = 0;
    answer = (req, res) => {
      requests++;
      if (requests === 1) req.socket.destroy();
      else res.writeHead(200, { 'content-type': 'application/fhir+json' }).end(ok);
    };
    expect(await client().findPatients('c1').then(idsOf)).toEqual(['p1']);
    expect(requests).toBe(2);

    requests = 0;
    answer = (req) => {
      requests++;
      req.socket.destroy();
    };
    const err = await failure(client().findPatients('c1'));
    expect(err.code).toBe('ERR_API_FHIR_UNAVAILABLE');
    expect(requests).toBe(2);

    requests = 0;
    answer = (_req, res) => {
      requests++;
      res.writeHead(502).end();
    };
    expect((await failure(client().findPatients('c1'))).message).toContain('answered 502');
    expect(requests).toBe(1);
  });

  it('a server that does not answer within FHIR_TIMEOUT_MS is a time-out naming the limit', async () => {
    answer = () => {};
    const err = await failure(client({ fhirTimeoutMs: 300 }).findPatients('c1'));
    expect([err.code, err.message]).toEqual(['ERR_API_FHIR_TIMEOUT', expect.stringContaining('300 ms')]);
    expect(err.cause).toBeDefined();
  });

  // Issue 49: a body is read as 'data' events; a body cut or stalled half-way is still a failure, never a page.
  it('a page cut half-way through its body is unavailable, and no page reaches the sink', async () => {
    const page = bundle(Array.from({ length: 40 }, (_, i) => ({ type: 'Observation', id: `b${i}` })));
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/fhir+json', 'content-length': String(page.length) });
      res.write(page.slice(0, page.length >> 1), () => res.socket?.destroy());
    };
    let sunk = 0;
    const err = await failure(client().everything('p1', async () => void sunk++, { pages: 0, resources: 0 }));
    expect(err.code).toBe('ERR_API_FHIR_UNAVAILABLE');
    expect(sunk).toBe(0);
  });

  it('a body that stops half-way is a time-out within FHIR_TIMEOUT_MS', async () => {
    const page = bundle([{ id: 'p1', mode: 'match' }]);
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/fhir+json', 'content-length': String(page.length) });
      res.write(page.slice(0, 10));
    };
    const err = await failure(client({ fhirTimeoutMs: 300 }).findPatients('c1'));
    expect([err.code, err.message]).toEqual(['ERR_API_FHIR_TIMEOUT', expect.stringContaining('300 ms')]);
  });

  it('a refused connection is unavailable, with the network error named', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const err = await failure(client({ fhirBaseUrl: new URL(`http://127.0.0.1:${port}/fhir`) }).findPatients('c1'));
    expect([err.code, err.message]).toEqual(['ERR_API_FHIR_UNAVAILABLE', 'FHIR request failed: ECONNREFUSED']);
    expect(err.cause).toBeDefined();
  });

  it('a certificate that does not chain to FHIR_CA_FILE is a TLS failure naming the reason, and no request reaches the server', async () => {
    const { pki } = testPki();
    let reached = 0;
    const tls = createHttps({ key: pki.server.keyPem, cert: pki.server.certPem }, (_req, res) => {
      reached++;
      res.end('{}');
    });
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    try {
      const port = (tls.address() as AddressInfo).port;
      const err = await failure(client({ fhirBaseUrl: new URL(`https://127.0.0.1:${port}/fhir`), fhirCa: pki.otherCa.certPem }).findPatients('c1'));
      expect([err.code, err.message]).toEqual(['ERR_API_FHIR_TLS', expect.stringMatching(/^FHIR server certificate rejected: [A-Z_]+$/)]);
      expect(err.cause).toBeDefined();
      expect(reached).toBe(0);
      // the same server with the right CA is trusted
      expect(await client({ fhirBaseUrl: new URL(`https://127.0.0.1:${port}/fhir`), fhirCa: pki.ca.certPem }).findPatients('c1').catch((e: Error) => e.message)).toContain('unusable');
    } finally {
      tls.closeAllConnections();
      await new Promise((r) => tls.close(r));
    }
  });

  it('reads the key per request (a rotated key is used at once)', async () => {
    serve({ '/fhir/Patient?identifier=c1&_count=2': bundle([]) });
    const config = { fhirBaseUrl: new URL(`${origin}/fhir`), fhirApiKey: 'old-key-1', fhirCa: null, fhirTimeoutMs: 5_000, identifierSystem: null, maxPages: 10, fhirMaxPageBytes: 65536 } as ApiConfig;
    const c = createFhirClient(config);
    clients.push(c);
    await c.findPatients('c1');
    c.useAccess(fhirAccessOf({ ...config, fhirApiKey: 'new-key-2' })); // what a SIGHUP reload does: a new access, the config untouched
    await c.findPatients('c1');
    expect(seen.map((s) => s.headers.apikey)).toEqual(['old-key-1', 'new-key-2']);
  });

  it('after close() nothing is sent', async () => {
    serve({ '/fhir/Patient?identifier=c1&_count=2': bundle([]) });
    const c = client();
    await c.close();
    await failure(c.findPatients('c1'));
    expect(seen).toHaveLength(0);
  });
});

describe('readiness ping', () => {
  it('asks FHIR_BASE_URL/metadata with the key and passes on a CapabilityStatement', async () => {
    serve({ '/fhir/metadata': '{"resourceType":"CapabilityStatement"}' });
    await client().ping();
    expect(seen.map((s) => `${s.url} ${s.headers.apikey}`)).toEqual([`/fhir/metadata ${KEY}`]);
  });

  it.each([
    ['<html>', 'metadata is not JSON'],
    ['null', 'metadata is not a CapabilityStatement'],
    ['{"resourceType":"OperationOutcome"}', 'metadata is not a CapabilityStatement'],
  ])('fails on %s', async (body, detail) => {
    serve({ '/fhir/metadata': body });
    const err = await failure(client().ping());
    expect([err.code, err.message]).toEqual(['ERR_API_FHIR_BAD_RESPONSE', `FHIR server sent an unusable response: ${detail}`]);
  });

  it('is bounded by the time-out it is given', async () => {
    answer = () => {};
    const err = await failure(client({ fhirTimeoutMs: 5_000 }).ping(200));
    expect([err.code, err.message]).toEqual(['ERR_API_FHIR_TIMEOUT', expect.stringContaining('200 ms')]);
  });
});

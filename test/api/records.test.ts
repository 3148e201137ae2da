/**
 * POST /api/patients after access is granted: lookup (0/1/many), identifier
 * escaping, every $everything page followed and re-based, de-duplication,
 * TLS against the hospital CA, limits, mid-stream aborts, concurrency.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { API_KEY, TOKEN_OK, testPki, useHarness, waitForAudit, type Harness } from './harness.js';
import { makeRecord, startFhirStandIn, type StandIn } from './stand-ins.js';
import { READY_CACHE_MS } from '../../src/api/routes/health.js';

const extra: StandIn[] = [];
// declared before useHarness(): after-hooks run in reverse, so these close after the test's harness
afterEach(async () => {
  await Promise.all(extra.splice(0).map((s) => s.close()));
});
const harness = useHarness();

const ok = { platformCareId: 'care-1', token: TOKEN_OK };
const practitioner = { fullUrl: 'http://hapi:8080/fhir/Practitioner/dr1', resource: { resourceType: 'Practitioner', id: 'dr1' }, search: { mode: 'include' } };

/**
 * Raw POST that reports a cut connection instead of throwing: status 0 when it
 * was cut before the headers reached the caller. A cut destroys the socket, and
 * bytes the response had written but not yet flushed (Node corks a chunked
 * response until the next tick) go with it, so a record cut in the same tick as
 * its first page was written reaches the caller as a closed connection.
 */
async function postRaw(t: Harness, body: unknown): Promise<{ status: number; text: string; failed: boolean }> {
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(`${t.url}/api/patients`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  } catch {
    return { status: 0, text: '', failed: true };
  }
  try {
    return { status: res.statusCode, text: await res.body.text(), failed: false };
  } catch {
    return { status: res.statusCode, text: '', failed: true };
  }
}

describe('patient lookup', () => {
  it('answers {} when no patient matches, without calling $everything', async () => {
    const t = await harness({ fhir: { patients: {} } });
    const res = await t.post(ok);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({});
    expect(t.fhir.seen.map((s) => s.url.split('?')[0])).toEqual(['/fhir-api-key-auth/Patient']);
    expect((await waitForAudit(t, 1))[0]).toMatchObject({ decision: 'not-found', status: 200, fhirPatientId: null, bytes: 2 });
  });

  it('returns no patient data when several patients match', async () => {
    const t = await harness({ fhir: { patients: { 'care-1': ['p1', 'p2'] }, records: { p1: makeRecord('p1', 3), p2: makeRecord('p2', 3) } } });
    const res = await t.post(ok);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({});
    expect(t.fhir.seen.some((s) => s.url.includes('$everything'))).toBe(false);
    expect((await waitForAudit(t, 1))[0]).toMatchObject({ decision: 'ambiguous', status: 200 });
  });

  it('sends the key and FHIR headers, and nothing but the key to FHIR', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 2) } } });
    expect((await t.post(ok)).status).toBe(200);
    for (const s of t.fhir.seen) {
      expect(s.headers).toMatchObject({ apikey: API_KEY, accept: 'application/fhir+json', 'cache-control': 'no-cache' });
      expect(s.headers.authorization).toBeUndefined();
    }
  });

  const values: Array<[string, string, string | undefined, string]> = [
    ['comma', 'a,b', undefined, 'a\\,b'],
    ['pipe', 'a|b', undefined, 'a\\|b'],
    ['dollar', 'a$b', undefined, 'a\\$b'],
    ['backslash', 'a\\b', undefined, 'a\\\\b'],
    ['plus', 'a+b', undefined, 'a+b'],
    ['all, with a system', 'x,y|z$\\+', 'https://healthtag.io', 'https://healthtag.io|x\\,y\\|z\\$\\\\+'],
    ['system escaped too', 'c1', 'urn:x|y,z$', 'urn:x\\|y\\,z\\$|c1'],
  ];
  it.each(values)('escapes a value with a %s (http://hl7.org/fhir/R4/search.html#escaping)', async (_name, careId, system, expected) => {
    const t = await harness({
      env: system ? { PLATFORM_IDENTIFIER_SYSTEM: system } : {},
      fhir: { patients: { [expected]: ['p1'] }, records: { p1: makeRecord('p1', 2) } },
    });
    const res = await t.post({ platformCareId: careId, token: TOKEN_OK });
    expect(res.status).toBe(200);
    expect(res.json.resources).toHaveLength(2); // the stand-in matched the exact escaped token
    const search = t.fhir.seen[0]?.url ?? '';
    expect(new URL(search, 'https://x').searchParams.get('identifier')).toBe(expected);
    if (careId.includes('+')) expect(search).toContain('%2B');
  });
});

describe('the identifier system is part of the match', () => {
  const PLATFORM = 'https://platform.example/care-id';
  // p1 is the platform's patient PC1; p2's hospital number and p3's national id hold values a care id could take.
  const identified = {
    p1: [{ system: PLATFORM, value: 'PC1' }, { system: 'urn:hospital:hn', value: 'HN1' }],
    p2: [{ system: PLATFORM, value: 'PC2' }, { system: 'urn:hospital:hn', value: 'PC9' }],
    p3: [{ system: 'urn:hospital:national-id', value: '1100' }],
  };
  const records = { p1: makeRecord('p1', 3), p2: makeRecord('p2', 4), p3: makeRecord('p3', 5) };

  it("answers not-found, not that patient, for a care id equal to another patient's identifier in another system", async () => {
    const t = await harness({ env: { PLATFORM_IDENTIFIER_SYSTEM: PLATFORM }, fhir: { patients: {}, identified, records } });
    for (const careId of ['PC9', '1100', 'HN1']) {
      const res = await t.post({ platformCareId: careId, token: TOKEN_OK });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({});
    }
    expect(t.fhir.seen.some((s) => s.url.includes('$everything'))).toBe(false);
    const own = await t.post({ platformCareId: 'PC1', token: TOKEN_OK });
    expect(own.json.resources).toHaveLength(3);
    const ends = t.audit();
    expect(ends.map((l) => [l.platformCareId, l.decision, l.fhirPatientId, l.identifierSystem])).toEqual([
      ['PC9', 'not-found', null, PLATFORM],
      ['1100', 'not-found', null, PLATFORM],
      ['HN1', 'not-found', null, PLATFORM],
      ['PC1', 'granted', 'p1', PLATFORM],
    ]);
    expect(t.auditLines().find((l) => l.phase === 'started')).toMatchObject({ fhirPatientId: 'p1', identifierSystem: PLATFORM });
    // The search named the system: identifier=<system>|<value>.
    expect(new URL(t.fhir.seen[0]?.url ?? '', 'https://x').searchParams.get('identifier')).toBe(`${PLATFORM}|PC9`);
  });

  it('with any system allowed explicitly, the audit line names the system that matched', async () => {
    const t = await harness({ env: { PLATFORM_ANY_IDENTIFIER_SYSTEM: 'true' }, fhir: { patients: {}, identified, records } });
    expect((await t.post({ platformCareId: 'PC9', token: TOKEN_OK })).json.resources).toHaveLength(4);
    const [line] = t.audit();
    expect(line).toMatchObject({ decision: 'granted', fhirPatientId: 'p2', identifierSystem: 'urn:hospital:hn' });
  });
});

describe('$everything', () => {
  it('follows every page, re-bases internal next links and drops repeated includes', async () => {
    const record = makeRecord('p1', 45);
    const t = await harness({ fhir: { records: { p1: record }, maxPageSize: 10, repeatedInclude: practitioner } });
    const res = await t.post(ok);
    expect(res.status).toBe(200);
    expect(res.json.resources).toEqual([...record.slice(0, 10), practitioner, ...record.slice(10)]);
    const pages = t.fhir.seen.filter((s) => s.url.includes('_getpages'));
    expect(pages).toHaveLength(4);
    for (const p of pages) expect(p.url).toMatch(/^\/fhir-api-key-auth\?_getpages=/);
    expect(t.fhir.seen.find((s) => s.url.includes('$everything'))?.url).toMatch(/_count=1000/);
    const [line] = await waitForAudit(t, 1);
    expect(line).toMatchObject({ decision: 'granted', fhirPatientId: 'p1', pages: 5, resources: 46, status: 200, aborted: false });
    expect(line?.bytes).toBe(Buffer.byteLength(res.text));
    // `prev`: the hash of the line before it (issue 46)
    expect(Object.keys(line ?? {}).sort()).toEqual(
      ['aborted', 'bytes', 'caller', 'callerRequestId', 'code', 'decision', 'durationMs', 'fhirPatientId', 'identifierSystem', 'pages', 'phase', 'platformCareId', 'prev', 'requestId', 'resources', 'status', 'time'],
    );
  });

  it('returns each entry as the server sent it (decimal precision kept)', async () => {
    const entry = { resource: { resourceType: 'Observation', id: 'o1', valueQuantity: { value: '__RAW:1.50__' } } };
    const t = await harness({ fhir: { records: { p1: [...makeRecord('p1', 1), entry] } } });
    const res = await t.post(ok);
    expect(res.text).toContain('"value":1.50');
    expect(res.json.resources).toHaveLength(2);
  });

  it('refuses a next link to another host and never sends it the key', async () => {
    const { pki } = testPki();
    const other = await startFhirStandIn({ tls: pki.server, apiKey: API_KEY, patients: {}, records: {} });
    extra.push(other);
    const foreign = `${other.url}?_getpages=stolen&_getpagesoffset=10`;
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 25) }, maxPageSize: 10, foreignNext: foreign } });
    const res = await postRaw(t, ok);
    expect(res.status).toBe(502);
    expect(JSON.parse(res.text).error.code).toBe('ERR_API_FHIR_FOREIGN_LINK');
    expect(other.seen).toHaveLength(0);
  });

  it('refuses a next link outside the server base even on the internal host', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 25) }, maxPageSize: 10, foreignNext: 'http://hapi:8080/other?_getpages=x' } });
    const res = await postRaw(t, ok);
    expect(res.status).toBe(502);
    expect(JSON.parse(res.text).error.code).toBe('ERR_API_FHIR_FOREIGN_LINK');
  });

  it('rejects a FHIR certificate that does not chain to FHIR_CA_FILE', async () => {
    const { pki } = testPki();
    const t = await harness({ env: { FHIR_CA_FILE: pki.files.otherCa } });
    const res = await t.post(ok);
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('ERR_API_FHIR_TLS');
    expect(t.fhir.seen).toHaveLength(0);
    await t.close();
    const u = await harness({ env: { FHIR_CA_FILE: '' } }); // system store only
    expect((await u.post(ok)).json.error.code).toBe('ERR_API_FHIR_TLS');
  });

  it('keeps verifying FHIR and platform certificates when NODE_TLS_REJECT_UNAUTHORIZED=0', async () => {
    const { pki } = testPki();
    const saved = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const t = await harness({ env: { FHIR_CA_FILE: pki.files.otherCa } });
      const res = await t.post(ok);
      expect(res.json.error.code).toBe('ERR_API_FHIR_TLS');
      expect(t.fhir.seen).toHaveLength(0);
      await t.close();
      const u = await harness({ platformTls: true, env: { PLATFORM_CA_FILE: pki.files.otherCa } });
      const denied = await u.post(ok);
      expect(denied.json.error.code).toBe('ERR_API_PLATFORM_UNAVAILABLE');
      expect(u.platform.seen).toHaveLength(0);
      expect(u.fhir.seen).toHaveLength(0);
    } finally {
      if (saved === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = saved;
    }
  });

  it('answers 504 when FHIR does not answer within FHIR_TIMEOUT_MS', async () => {
    const t = await harness({ env: { FHIR_TIMEOUT_MS: '300' }, fhir: { delayMs: 3000 } });
    const res = await t.post(ok);
    expect(res.status).toBe(504);
    expect(res.json.error.code).toBe('ERR_API_FHIR_TIMEOUT');
  });

  it('refuses a Patient id that is not a FHIR id', async () => {
    const t = await harness({ fhir: { patients: { 'care-1': ['..'] } } });
    const res = await t.post(ok);
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('ERR_API_FHIR_BAD_RESPONSE');
    expect(t.fhir.seen).toHaveLength(1);
  });

  it('answers 502 when the first page fails, with a JSON error', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 5) }, failPage: { page: 1, mode: 'status' } } });
    const res = await t.post(ok);
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('ERR_API_FHIR_UNAVAILABLE');
  });

  it.each(['reset', 'status', 'gone'] as const)('cuts the connection when a later page fails (%s)', async (mode) => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 50) }, maxPageSize: 10, failPage: { page: 3, mode } } });
    const res = await postRaw(t, ok);
    expect(res.status).toBe(200);
    expect(res.failed).toBe(true); // the caller cannot read a complete body
    const [line] = await waitForAudit(t, 1);
    expect(line).toMatchObject({ decision: 'error', aborted: true, pages: 2, resources: 20 });
  });

  it('stops fetching when the caller goes away mid-stream, and keeps serving', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 200) }, maxPageSize: 10, delayMs: 30 } });
    // The event that matters is the end of the page loop: see when, and how, it ends.
    const fhir = t.running.api.context.fhir;
    const everything = fhir.everything.bind(fhir);
    let loopEnded: Promise<unknown> | undefined;
    fhir.everything = (...args) => {
      const run = everything(...args);
      loopEnded = run.then(() => 'fetched every page', (err: unknown) => err);
      return run;
    };
    const controller = new AbortController();
    const res = await request(`${t.url}/api/patients`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ok), signal: controller.signal });
    expect(res.statusCode).toBe(200);
    controller.abort();
    await res.body.text().catch(() => undefined);
    // the audit line is written when the API sees the caller's connection close
    const [line] = await waitForAudit(t, 1);
    expect(line).toMatchObject({ decision: 'error', aborted: true });
    const requestsAtClose = t.fhir.seen.length;
    // Without stop-on-disconnect the loop either fetches all 20 pages or never ends (this test then times out).
    const outcome = await loopEnded;
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toBe('caller closed the connection');
    // at most the page that was in flight when the caller left; 21 requests would be the whole record
    expect(t.fhir.seen.length).toBeLessThanOrEqual(requestsAtClose + 1);
    expect(t.fhir.seen.length).toBeLessThan(21);
    expect((await t.post(ok)).status).toBe(200);
  });

  it('fails instead of truncating past MAX_RESOURCES and MAX_PAGES', async () => {
    const t = await harness({ env: { MAX_RESOURCES: '5' }, fhir: { records: { p1: makeRecord('p1', 30) }, maxPageSize: 10 } });
    const res = await t.post(ok);
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('ERR_API_RECORD_TOO_LARGE');
    expect(res.json.error.message).toContain('MAX_RESOURCES');
    await t.close();
    const u = await harness({ env: { MAX_PAGES: '2' }, fhir: { records: { p1: makeRecord('p1', 30) }, maxPageSize: 10 } });
    const cut = await postRaw(u, ok);
    expect(cut.failed).toBe(true);
    expect([0, 200]).toContain(cut.status); // cut, before or after the headers: never an error reply that looks whole
    expect((await waitForAudit(u, 1))[0]).toMatchObject({ code: 'ERR_API_RECORD_TOO_LARGE', aborted: true, pages: 2 });
  });

  it('serves concurrent requests for different patients, each with its own record', async () => {
    const tokens: Record<string, string> = { 'tok-a': 'care-a', 'tok-b': 'care-b' };
    const t = await harness({
      platform: (auth) => (auth && tokens[auth] ? { status: 200, body: { platformCareId: tokens[auth] } } : { status: 401 }),
      fhir: { patients: { 'care-a': ['pa'], 'care-b': ['pb'] }, records: { pa: makeRecord('pa', 35), pb: makeRecord('pb', 12) }, maxPageSize: 10, delayMs: 5 },
      env: { MAX_CONCURRENT_REQUESTS: '32' },
    });
    const calls = Array.from({ length: 24 }, (_, i) => (i % 2 ? ['care-a', 'tok-a'] : ['care-b', 'tok-b']));
    const results = await Promise.all(calls.map(([careId, token]) => t.post({ platformCareId: careId, token })));
    results.forEach((r, i) => {
      const id = i % 2 ? 'pa' : 'pb';
      expect(r.status).toBe(200);
      expect(r.json.resources).toEqual(makeRecord(id, id === 'pa' ? 35 : 12));
    });
    // a token for one patient never opens another's record
    expect((await t.post({ platformCareId: 'care-a', token: 'tok-b' })).status).toBe(400);
  });
});

describe('readiness and metrics', () => {
  it('reports ready when platform and gateway answer, 503 otherwise', async () => {
    const t = await harness();
    const ready = await request(`${t.url}/api/ready`);
    expect(ready.statusCode).toBe(200);
    expect(await ready.body.json()).toEqual({ platform: 'ok', fhir: 'ok', audit: 'ok' });
    await t.fhir.close();
    // Cached for READY_CACHE_MS: the next answer is the same, then a fresh check sees FHIR down.
    expect((await request(`${t.url}/api/ready`)).statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, READY_CACHE_MS + 100));
    const down = await request(`${t.url}/api/ready`);
    const body = (await down.body.json()) as { error: { code: string; message: string } };
    expect(down.statusCode).toBe(503);
    expect(body.error).toMatchObject({ code: 'ERR_API_NOT_READY' });
    expect(body.error.message).toContain('ERR_API_FHIR_UNAVAILABLE');
  });

  it('checks upstreams at most once per READY_CACHE_MS however many callers ask', async () => {
    const t = await harness();
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const r = await request(`${t.url}/api/ready`);
        await r.body.dump();
        return r.statusCode;
      }),
    );
    expect(statuses.every((s) => s === 200)).toBe(true);
    for (let i = 0; i < 5; i++) await (await request(`${t.url}/api/ready`)).body.dump();
    expect(t.platform.seen).toHaveLength(1);
    expect(t.fhir.seen).toHaveLength(1);
    await new Promise((r) => setTimeout(r, READY_CACHE_MS + 100));
    await (await request(`${t.url}/api/ready`)).body.dump();
    expect(t.platform.seen).toHaveLength(2);
    expect(t.fhir.seen).toHaveLength(2);
  });

  it('refuses /api/ready to callers outside ALLOWED_CALLERS without calling upstream; health-check stays open', async () => {
    const t = await harness({ env: { ALLOWED_CALLERS: '10.0.0.0/8' } });
    const ready = await request(`${t.url}/api/ready`);
    const body = (await ready.body.json()) as { error: { code: string } };
    expect(ready.statusCode).toBe(403);
    expect(body.error.code).toBe('ERR_API_CALLER_FORBIDDEN');
    expect(t.platform.seen).toHaveLength(0);
    expect(t.fhir.seen).toHaveLength(0);
    const health = await request(`${t.url}/api/health-check`);
    expect(health.statusCode).toBe(200);
    await health.body.dump();
  });

  it('counts requests, pages, resources and upstream errors on the loopback metrics listener', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 25) }, maxPageSize: 10 } });
    expect(t.running.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await t.post(ok);
    await t.post({ ...ok, token: 'bad' });
    await waitForAudit(t, 2);
    const text = await (await request(`${t.running.metricsUrl}/metrics`)).body.text();
    expect(text).toContain('hospital_api_requests_total{route="/api/patients",outcome="granted",status="200"} 1');
    expect(text).toContain('hospital_api_requests_total{route="/api/patients",outcome="denied",status="400"} 1');
    expect(text).toMatch(/hospital_api_fhir_pages_total 3\b/);
    expect(text).toMatch(/hospital_api_fhir_resources_total 25\b/);
    expect(text).toContain('hospital_api_request_duration_seconds_bucket');
    const pub = await request(`${t.url}/metrics`);
    await pub.body.dump();
    expect(pub.statusCode).toBe(404); // not on the public port
  });
});

describe('graceful shutdown', () => {
  it('finishes an in-flight request, then stops accepting', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 30) }, maxPageSize: 10, delayMs: 150 } });
    const inflight = t.post(ok);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stopping = t.running.stop();
    const res = await inflight;
    expect(res.status).toBe(200);
    expect(res.json.resources).toHaveLength(30);
    await stopping;
    await expect(request(`${t.url}/api/health-check`)).rejects.toThrow();
    expect((await waitForAudit(t, 1))[0]).toMatchObject({ decision: 'granted' });
  });
});

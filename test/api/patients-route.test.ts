/**
 * POST /api/patients and the readiness route at the edges the other API tests
 * leave open (issue 11, mutation testing): the exact validation limits and
 * messages, the audit lines (started and end, written once, before the reply,
 * with a duration an auditor can trust), the concurrency slot, the metrics by
 * upstream, and /api/ready failing on each of its three checks.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { TOKEN_OK, defaultPlatform, useHarness, waitForAudit, type Harness, type HarnessOptions } from './harness.js';
import { until } from '../helpers/until.js';
import { makeRecord } from './stand-ins.js';

const harness = useHarness();
const ok = { platformCareId: 'care-1', token: TOKEN_OK };

function lines(t: Harness): Array<Record<string, unknown>> {
  return readFileSync(t.auditPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function metrics(t: Harness): Promise<string> {
  return (await request(`${t.running.metricsUrl}/metrics`)).body.text();
}

/**
 * The request counts of POST /api/patients, once there is one: a request the server cut or a
 * caller left is counted when the server has finished with it, which may be after the caller
 * has seen the connection end (measured: a loaded CI machine read the metrics before it).
 */
async function patientCounts(t: Harness): Promise<string[] | null> {
  const counts = (text: string) => text.match(/^hospital_api_requests_total\{route="\/api\/patients".*$/gm);
  let found = counts(await metrics(t));
  for (let i = 0; i < 200 && !found; i++) {
    await new Promise((r) => setTimeout(r, 10));
    found = counts(await metrics(t));
  }
  return found;
}

describe('validation limits and messages', () => {
  it.each([
    ['a JSON string', '"care-1"', 'body must be a JSON object'],
    ['a JSON number', '7', 'body must be a JSON object'],
    ['an array', JSON.stringify([ok]), 'body must be a JSON object'],
    ['a care id of 257 characters', JSON.stringify({ ...ok, platformCareId: 'x'.repeat(257) }), 'platformCareId must be a string of 1 to 256 characters'],
    ['a care id with a control character', JSON.stringify({ ...ok, platformCareId: 'care\u0001-1' }), 'platformCareId holds control characters'],
    ['a care id with DEL', JSON.stringify({ ...ok, platformCareId: 'care-1\u007f' }), 'platformCareId holds control characters'],
    // Issue 45: JSON may escape a lone surrogate; such a string has no UTF-8 form, so no search could carry it.
    ['a care id with a lone high surrogate', `{"platformCareId":"care\\ud800","token":"${TOKEN_OK}"}`, 'platformCareId is not well-formed Unicode (it holds a lone surrogate)'],
    ['a care id with a lone low surrogate', `{"platformCareId":"\\udc00care","token":"${TOKEN_OK}"}`, 'platformCareId is not well-formed Unicode (it holds a lone surrogate)'],
    ['a care id with a surrogate pair reversed', `{"platformCareId":"\\udc00\\ud800","token":"${TOKEN_OK}"}`, 'platformCareId is not well-formed Unicode (it holds a lone surrogate)'],
    ['a token of 8193 characters', JSON.stringify({ ...ok, token: 'x'.repeat(8193) }), 'token must be printable ASCII of 1 to 8192 characters'],
    ['a token with a non-ASCII character', JSON.stringify({ ...ok, token: 'Bearer é' }), 'token must be printable ASCII of 1 to 8192 characters'],
    ['a numeric token', JSON.stringify({ ...ok, token: 12345 }), 'token must be printable ASCII of 1 to 8192 characters'],
  ])('refuses %s with 400 and says why', async (_name, body, detail) => {
    const t = await harness();
    const res = await t.post(body);
    expect([res.status, res.json.error.code, res.json.error.message]).toEqual([400, 'ERR_API_BAD_REQUEST', `Bad request: ${detail}`]);
    expect(t.platform.seen).toHaveLength(0);
  });

  it('accepts a care id of 256 characters and a token of 8192, and asks the platform', async () => {
    const t = await harness({ platform: () => ({ status: 401 }) });
    const res = await t.post({ platformCareId: 'x'.repeat(256), token: 'y'.repeat(8192) });
    expect(res.json.error.code).toBe('ERR_API_ACCESS_DENIED');
    expect(t.platform.seen).toHaveLength(1);
  });

  it('accepts a care id with a character outside the BMP (a well-formed surrogate pair) and searches for it', async () => {
    const t = await harness();
    const res = await t.post({ ...ok, platformCareId: 'care-\u{1F600}' });
    expect(res.status).toBe(200);
    expect(t.fhir.seen.some((s) => s.url.includes(`identifier=${encodeURIComponent('care-\u{1F600}')}`))).toBe(true);
  });
});

describe('the audit trail of a request', () => {
  it('a record: a started line, then one end line, with a duration within what the caller measured', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 3) }, delayMs: 60 } });
    const t0 = process.hrtime.bigint();
    const res = await request(`${t.url}/api/patients`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'rec-1' }, body: JSON.stringify(ok) });
    const text = await res.body.text();
    const elapsedMs = Number(process.hrtime.bigint() - t0) / 1e6;
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    // The server's own id, not the caller's: the audit line is found by it.
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(text).resources).toHaveLength(3);
    const all = lines(t); // on disk before the last byte went out: no waiting
    expect(all.map((l) => l.phase)).toEqual(['started', 'end']);
    expect(all[0]).toMatchObject({ phase: 'started', requestId: res.headers['x-request-id'], callerRequestId: 'rec-1', decision: 'granted', code: null, status: 200, aborted: false, fhirPatientId: 'p1' });
    const end = all[1] as { durationMs: number };
    expect(all[1]).toMatchObject({ phase: 'end', decision: 'granted', code: null, aborted: false, resources: 3 });
    // two FHIR calls of at least 60 ms each; rounded to 0.1 ms; never more than the caller waited
    expect(end.durationMs).toBeGreaterThanOrEqual(120);
    expect(end.durationMs).toBeLessThanOrEqual(elapsedMs);
    expect(Math.abs(end.durationMs * 10 - Math.round(end.durationMs * 10))).toBeLessThan(1e-6);
  });

  it('an answer without a record ({}, or an error): its end line is on disk before the reply, not aborted, bytes counted', async () => {
    const t = await harness({ fhir: { patients: {} } });
    const res = await t.post(ok);
    expect(res.json).toEqual({});
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(lines(t)).toEqual([expect.objectContaining({ phase: 'end', decision: 'not-found', aborted: false, bytes: 2, status: 200 })]);
    const bad = await t.post('[]');
    expect(bad.status).toBe(400);
    expect(lines(t)[1]).toMatchObject({ phase: 'end', decision: 'error', code: 'ERR_API_BAD_REQUEST', aborted: false, status: 400, bytes: Buffer.byteLength(bad.text) });
  });

  /**
   * A harness whose platform answers after 300 ms, and a raw caller that sends one request and
   * leaves as soon as the platform has it (after beforeLeaving); resolves once the platform has answered the API.
   */
  async function leaveWhilePlatformDecides(requestId: string, fhir: HarnessOptions['fhir'] = {}, beforeLeaving: (t: Harness) => void = () => undefined) {
    let answered!: () => void;
    const platformDone = new Promise<void>((r) => (answered = r));
    const t = await harness({
      fhir,
      platform: (auth) => {
        setTimeout(answered, 400);
        return { ...defaultPlatform(auth), delayMs: 300 };
      },
    });
    const u = new URL(t.url);
    const socket = connect(Number(u.port), u.hostname);
    socket.on('error', () => undefined);
    const body = JSON.stringify(ok);
    socket.write(`POST /api/patients HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${requestId}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    for (let i = 0; i < 200 && t.platform.seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    beforeLeaving(t);
    socket.destroy();
    return { t, platformDone };
  }

  it('a caller that leaves while the platform decides gets exactly one end line, marked aborted', async () => {
    const { t, platformDone } = await leaveWhilePlatformDecides('gone-1');
    const [line] = await waitForAudit(t, 1);
    // nothing was answered: nginx's 499 (client closed request), not the 200 a reply would have had
    expect(line).toMatchObject({ callerRequestId: 'gone-1', aborted: true, code: 'ERR_API_CALLER_LEFT', decision: 'error', status: 499 });
    await platformDone; // the handler finishes after the caller left: no second line, and no record fetched for nobody
    expect((await t.post(ok)).status).toBe(200);
    const gone = lines(t).filter((l) => l.callerRequestId === 'gone-1');
    expect(gone.map((l) => l.phase)).toEqual(['end']);
    expect(t.fhir.seen.filter((s) => s.url.includes('$everything'))).toHaveLength(1); // the second request's only
  });

  it('a caller that leaves while a search that finds nobody runs gets exactly one end line', async () => {
    const { t, platformDone } = await leaveWhilePlatformDecides('gone-2', { patients: {} });
    await waitForAudit(t, 1);
    await platformDone;
    // the handler answers {} for nobody after the caller left: its reply must not add a line
    expect((await t.post({ ...ok, platformCareId: 'care-9' })).json).toEqual({});
    expect(lines(t).filter((l) => l.callerRequestId === 'gone-2').map((l) => [l.phase, l.aborted])).toEqual([['end', true]]);
  });

  it('a caller that leaves while the log cannot be written is counted once, as an error', async () => {
    // the log becomes unwritable (EISDIR) before the caller leaves: the close handler's end line fails
    const { t, platformDone } = await leaveWhilePlatformDecides('gone-3', {}, (h) => {
      h.blockAudit();
    });
    await platformDone;
    expect(await patientCounts(t)).toEqual([
      'hospital_api_requests_total{route="/api/patients",outcome="error",status="499"} 1',
    ]);
    // no patient data was fetched for nobody
    expect(t.fhir.seen.filter((s) => s.url.includes('$everything'))).toHaveLength(0);
  });

  it('a record whose end line cannot be written is cut, never completed, even though every page was sent', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 4) }, pageDelay: { page: 1, ms: 400 } } });
    const pending = request(`${t.url}/api/patients`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ok) });
    for (let i = 0; i < 200 && !t.auditLines().some((l) => l.phase === 'started'); i++) await new Promise((r) => setTimeout(r, 5));
    expect(t.auditLines().map((l) => l.phase)).toEqual(['started']);
    // the log becomes unwritable while the record is fetched (EISDIR on every open, even as root)
    t.blockAudit();
    const res = await pending;
    expect(res.statusCode).toBe(200); // the headers left with the first page
    const text = await res.body.text().then((x) => x, () => null);
    if (text !== null) expect(() => JSON.parse(text), 'a complete record reached the caller').toThrow();
    // counted once, as what the caller got (a cut record): not also as granted when the end line was tried
    expect(await patientCounts(t)).toEqual([
      'hospital_api_requests_total{route="/api/patients",outcome="error",status="200"} 1',
    ]);
  });

  it('a {} reply whose end line cannot be written is counted once, as the 503 the caller got', async () => {
    // the platform holds its yes for 300 ms: the log becomes unwritable while it decides
    const t = await harness({ fhir: { patients: {} }, platform: (auth) => ({ ...defaultPlatform(auth), delayMs: 300 }) });
    const pending = t.post({ ...ok, platformCareId: 'care-9' });
    for (let i = 0; i < 200 && t.platform.seen.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    t.blockAudit();
    const res = await pending;
    expect(res.status).toBe(503);
    expect(res.json.error.code).toBe('ERR_API_AUDIT_UNAVAILABLE');
    const m = await metrics(t);
    expect(m.match(/^hospital_api_requests_total\{route="\/api\/patients".*$/gm)).toEqual([
      'hospital_api_requests_total{route="/api/patients",outcome="error",status="503"} 1',
    ]);
  });

  it('leaves no listener behind on the response after each back-pressured write', { timeout: 60_000 }, async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      // 30 pages of about 400 KB to a caller that reads a chunk, then pauses: the socket's buffers
      // fill and most page writes wait for drain (30 of 60 writes did, measured)
      const t = await harness({ env: { FHIR_PAGE_SIZE: '1000' }, fhir: { records: { p1: makeRecord('p1', 30_000) } } });
      const u = new URL(t.url);
      const socket = connect(Number(u.port), u.hostname);
      let tail = '';
      let bytes = 0;
      const done = new Promise<void>((resolve, reject) => {
        socket.on('error', reject);
        socket.on('close', () => reject(new Error(`closed after ${bytes} bytes`)));
        socket.on('data', (d: Buffer) => {
          bytes += d.length;
          tail = (tail + d.toString('latin1')).slice(-16);
          if (tail.endsWith(']}\r\n0\r\n\r\n')) resolve();
          socket.pause();
          setTimeout(() => socket.resume(), 1);
        });
      });
      const body = JSON.stringify(ok);
      socket.write(`POST /api/patients HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await done;
      socket.destroy();
      expect(bytes).toBeGreaterThan(10_000_000);
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('MAX_CONCURRENT_REQUESTS', () => {
  it('frees the slot when a request ends, and a refused request frees none', async () => {
    // The held request waits at the FHIR stand-in, in its slot (a slot is taken after validate-access).
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    let holding = false;
    const t = await harness({
      env: { MAX_CONCURRENT_REQUESTS: '1', API_QUEUE_LENGTH: '0' },
      fhir: { records: { p1: makeRecord('p1', 2) }, gate: () => (holding ? opened : Promise.resolve()) },
    });
    for (let i = 0; i < 3; i++) expect((await t.post(ok)).status, `request ${i + 1} after the others ended`).toBe(200);
    holding = true;
    const seenBefore = t.fhir.seen.length;
    const held = t.post(ok);
    await until(() => t.fhir.seen.length > seenBefore, { what: 'the held request at the FHIR stand-in', intervalMs: 10 });
    const busy = await t.post(ok);
    expect([busy.status, busy.json.error.code, busy.json.error.message]).toEqual([
      503,
      'ERR_API_BUSY',
      'Too many patient requests: every slot is in use (MAX_CONCURRENT_REQUESTS=1) and the queue is full (API_QUEUE_LENGTH=0); retry after the Retry-After delay',
    ]);
    expect((await t.post(ok)).status, 'the refused request freed no slot').toBe(503);
    holding = false;
    open();
    expect((await held).status).toBe(200);
    expect((await t.post(ok)).status).toBe(200);
  });
});

describe('metrics', () => {
  it('counts upstream errors by upstream and code, and only upstream errors; durations by outcome, in seconds', async () => {
    const t = await harness({ platform: (auth) => (auth === 'Bearer down' ? { status: 503 } : defaultPlatform(auth)), fhir: { records: { p1: makeRecord('p1', 2) } } });
    const t0 = Date.now();
    expect((await t.post(ok)).status).toBe(200);
    const grantedSeconds = (Date.now() - t0) / 1000;
    expect((await t.post({ ...ok, token: 'Bearer down' })).status).toBe(502);
    expect((await t.post('[]')).status).toBe(400);
    await t.fhir.close();
    expect((await t.post(ok)).status).toBe(502);
    await waitForAudit(t, 4);
    const text = await metrics(t);
    expect(text).toContain('hospital_api_upstream_errors_total{upstream="platform",code="ERR_API_PLATFORM_UNAVAILABLE"} 1');
    expect(text).toContain('hospital_api_upstream_errors_total{upstream="fhir",code="ERR_API_FHIR_UNAVAILABLE"} 1');
    expect(text).not.toContain('code="ERR_API_BAD_REQUEST"');
    expect(text).toContain('hospital_api_request_duration_seconds_count{route="/api/patients",outcome="granted"} 1');
    expect(text).toContain('hospital_api_request_duration_seconds_count{route="/api/patients",outcome="error"} 3');
    const sum = Number(/hospital_api_request_duration_seconds_sum\{route="\/api\/patients",outcome="granted"\} ([\d.e-]+)/.exec(text)?.[1]);
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThanOrEqual(grantedSeconds);
  });
});

describe('a record whose later page holds only repeats', () => {
  it('still sends valid JSON: nothing is written for the empty page', async () => {
    const record = makeRecord('p1', 10) as Array<{ fullUrl: string }>;
    const t = await harness({ fhir: { records: { p1: [...record, record[1], record[2]] }, maxPageSize: 10 } });
    const res = await t.post(ok);
    expect(res.status).toBe(200);
    expect((res.json as { resources: unknown[] }).resources).toHaveLength(10);
  });
});

describe('/api/ready', () => {
  it('answers 503 naming the platform when only the platform is down', async () => {
    const t = await harness({ platform: () => ({ status: 500 }) });
    const res = await request(`${t.url}/api/ready`);
    const body = (await res.body.json()) as { error: { code: string; message: string } };
    expect(res.statusCode).toBe(503);
    expect(body.error).toMatchObject({ code: 'ERR_API_NOT_READY', message: 'Not ready: platform ERR_API_PLATFORM_UNAVAILABLE, fhir ok, audit ok' });
  });

  it('writes nothing to a healthy audit log', async () => {
    const t = await harness();
    for (let i = 0; i < 2; i++) expect((await request(`${t.url}/api/ready`)).statusCode).toBe(200);
    expect(t.auditLines()).toEqual([]);
  });

  it('names the refused caller', async () => {
    const t = await harness({ env: { ALLOWED_CALLERS: '10.0.0.0/8' } });
    const res = await request(`${t.url}/api/ready`);
    expect(((await res.body.json()) as { error: { message: string } }).error.message).toBe('Caller 127.0.0.1 is not in ALLOWED_CALLERS');
    expect((await t.post(ok)).json.error.message).toBe('Caller 127.0.0.1 is not in ALLOWED_CALLERS');
  });

  it('health-check answers {} as JSON', async () => {
    const t = await harness();
    const res = await request(`${t.url}/api/health-check`);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(await res.body.json()).toEqual({});
  });
});

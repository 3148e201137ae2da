/**
 * POST /api/patients before any FHIR call: validation and body limit, the
 * caller allow-list, and the access flow (spec §4.1 rule 2, §7).
 */
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { API_KEY, TOKEN_OK, useHarness, waitForAudit, type HarnessOptions } from './harness.js';

const harness = useHarness();

const ok = { platformCareId: 'care-1', token: TOKEN_OK };

describe('health and routing', () => {
  it('answers health-check with {} and its own X-Request-Id, whatever the caller sent', async () => {
    const t = await harness();
    const res = await request(`${t.url}/api/health-check`);
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({});
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    for (const given of ['abc-123', 'a b\tc']) {
      const sent = await request(`${t.url}/api/health-check`, { headers: { 'x-request-id': given } });
      await sent.body.dump();
      expect(sent.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("writes the server's own request id in the audit log, the caller's apart, so a caller cannot choose or repeat it", async () => {
    const t = await harness();
    const first = await t.post({ platformCareId: 'care-1', token: TOKEN_OK }, { 'x-request-id': 'same-id' });
    const second = await t.post({ platformCareId: 'care-1', token: 'Bearer nope' }, { 'x-request-id': 'same-id' });
    const third = await t.post({ platformCareId: 'care-1', token: TOKEN_OK }, { 'x-request-id': 'bad id with spaces' });
    const ends = t.audit();
    expect(ends.map((l) => [l.requestId, l.callerRequestId])).toEqual([
      [first.headers['x-request-id'], 'same-id'],
      [second.headers['x-request-id'], 'same-id'],
      [third.headers['x-request-id'], null],
    ]);
    expect(new Set(ends.map((l) => l.requestId)).size).toBe(3);
    for (const l of ends) expect(l.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.json.error.requestId).toBe(second.headers['x-request-id']);
  });

  it('answers unknown routes with the error shape and the same request id', async () => {
    const t = await harness();
    const res = await request(`${t.url}/api/nope`);
    const body = (await res.body.json()) as { error: { code: string; requestId: string } };
    expect(res.statusCode).toBe(404);
    expect(body.error.code).toBe('ERR_API_NOT_FOUND');
    expect(body.error.requestId).toBe(res.headers['x-request-id']);
  });
});

describe('validation (no upstream call for a bad request)', () => {
  const bad: Array<[string, unknown]> = [
    ['missing token', { platformCareId: 'care-1' }],
    ['missing platformCareId', { token: TOKEN_OK }],
    ['empty platformCareId', { platformCareId: '', token: TOKEN_OK }],
    ['empty token', { platformCareId: 'care-1', token: '' }],
    ['numeric platformCareId', { platformCareId: 12, token: TOKEN_OK }],
    ['token with a newline', { platformCareId: 'care-1', token: 'a\r\nX-Evil: 1' }],
    ['careId too long', { platformCareId: 'x'.repeat(257), token: TOKEN_OK }],
    ['array body', [ok]],
    ['null body', null],
    ['invalid JSON', '{"platformCareId":'],
  ];
  it.each(bad)('rejects %s with 400', async (_name, body) => {
    const t = await harness();
    const res = await t.post(body);
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('ERR_API_BAD_REQUEST');
    expect(res.json.error.requestId).toBe(res.headers['x-request-id']);
    expect(t.platform.seen).toHaveLength(0);
    expect(t.fhir.seen).toHaveLength(0);
    const [line] = await waitForAudit(t, 1);
    expect(line).toMatchObject({ decision: 'error', code: 'ERR_API_BAD_REQUEST', status: 400 });
  });

  it('rejects a non-JSON content type with 400', async () => {
    const t = await harness();
    const res = await t.post('platformCareId=care-1', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(400);
    expect(t.platform.seen).toHaveLength(0);
  });

  it('refuses a body over 64 KB with 413 and keeps serving', async () => {
    const t = await harness();
    const res = await t.post({ platformCareId: 'care-1', token: 'x'.repeat(70 * 1024) });
    expect(res.status).toBe(413);
    expect(res.json.error.code).toBe('ERR_API_BODY_TOO_LARGE');
    expect(t.platform.seen).toHaveLength(0);
    expect((await t.post(ok)).status).toBe(200);
  });
});

describe('ALLOWED_CALLERS', () => {
  it('answers 403 to other callers before reading the body, with no upstream call', async () => {
    const t = await harness({ env: { ALLOWED_CALLERS: '10.0.0.0/8, 192.0.2.7' } });
    for (const body of [ok, 'not json']) {
      const res = await t.post(body);
      expect(res.status).toBe(403);
      expect(res.json.error.code).toBe('ERR_API_CALLER_FORBIDDEN');
    }
    expect(t.platform.seen).toHaveLength(0);
    expect(t.fhir.seen).toHaveLength(0);
    const lines = await waitForAudit(t, 2);
    expect(lines[0]).toMatchObject({ decision: 'denied', code: 'ERR_API_CALLER_FORBIDDEN', caller: '127.0.0.1' });
  });

  it('lets listed addresses and networks through', async () => {
    const t = await harness({ env: { ALLOWED_CALLERS: '10.1.2.3,127.0.0.0/8' } });
    expect((await t.post(ok)).status).toBe(200);
  });

  it('uses X-Forwarded-For only from a trusted proxy (TRUST_PROXY)', async () => {
    const t = await harness({ env: { ALLOWED_CALLERS: '203.0.113.5', TRUST_PROXY: '127.0.0.1' } });
    expect((await t.post(ok, { 'x-forwarded-for': '203.0.113.5' })).status).toBe(200);
    expect((await t.post(ok, { 'x-forwarded-for': '198.51.100.1' })).status).toBe(403);
    await t.close();
    const u = await harness({ env: { ALLOWED_CALLERS: '203.0.113.5' } });
    expect((await u.post(ok, { 'x-forwarded-for': '203.0.113.5' })).status).toBe(403);
  });
});

describe('access flow', () => {
  it('forwards the token unchanged as Authorization to /validate-access (GET by default)', async () => {
    const t = await harness();
    expect((await t.post(ok)).status).toBe(200);
    expect(t.platform.seen).toHaveLength(1);
    expect(t.platform.seen[0]).toMatchObject({ method: 'GET', url: '/validate-access' });
    expect(t.platform.seen[0]?.headers.authorization).toBe(TOKEN_OK);
    expect(t.platform.seen[0]?.headers.apikey).toBeUndefined();
  });

  it('uses POST with the care id when PLATFORM_VALIDATE_METHOD=POST, over HTTPS with PLATFORM_CA_FILE', async () => {
    const t = await harness({ env: { PLATFORM_VALIDATE_METHOD: 'POST' }, platformTls: true });
    expect(t.platform.url).toMatch(/^https:/);
    expect((await t.post(ok)).status).toBe(200);
    expect(t.platform.seen[0]?.method).toBe('POST');
    expect(JSON.parse(t.platform.seen[0]?.body ?? '')).toEqual({ platformCareId: 'care-1' });
  });

  const cases: Array<[string, HarnessOptions['platform'], number, string]> = [
    ['401 → denied', () => ({ status: 401 }), 400, 'ERR_API_ACCESS_DENIED'],
    ['403 → denied', () => ({ status: 403 }), 400, 'ERR_API_ACCESS_DENIED'],
    ['404 → incomplete credentials', () => ({ status: 404 }), 400, 'ERR_API_UPSTREAM_CREDENTIALS'],
    ['422 → incomplete credentials', () => ({ status: 422 }), 400, 'ERR_API_UPSTREAM_CREDENTIALS'],
    ['500 → 502', () => ({ status: 500 }), 502, 'ERR_API_PLATFORM_UNAVAILABLE'],
    ['503 → 502', () => ({ status: 503 }), 502, 'ERR_API_PLATFORM_UNAVAILABLE'],
    ['connection reset → 502', () => ({ status: 200, reset: true }), 502, 'ERR_API_PLATFORM_UNAVAILABLE'],
    ['token for another patient → denied', () => ({ status: 200, body: { platformCareId: 'care-2' } }), 400, 'ERR_API_ACCESS_DENIED'],
  ];
  it.each(cases)('%s', async (_name, platform, status, code) => {
    const t = await harness({ platform });
    const res = await t.post(ok);
    expect(res.status).toBe(status);
    expect(res.json.error.code).toBe(code);
    expect(t.fhir.seen).toHaveLength(0); // nothing reaches FHIR before access is granted
    const [line] = await waitForAudit(t, 1);
    expect(line).toMatchObject({ code, status, fhirPatientId: null, pages: 0 });
    expect(line?.decision).toBe(status === 400 ? 'denied' : 'error');
  });

  it('grants a JSON reply naming the same platformCareId', async () => {
    const t = await harness({ platform: () => ({ status: 200, body: { platformCareId: 'care-1' } }) });
    expect((await t.post(ok)).status).toBe(200);
  });

  it('answers 504 quickly when the platform does not answer in PLATFORM_TIMEOUT_MS', async () => {
    const t = await harness({ env: { PLATFORM_TIMEOUT_MS: '300' }, platform: () => ({ status: 200, delayMs: 5000 }) });
    const started = Date.now();
    const res = await t.post(ok);
    expect(res.status).toBe(504);
    expect(res.json.error.code).toBe('ERR_API_PLATFORM_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(4000); // well before the stand-in's 5 s
    expect(t.fhir.seen).toHaveLength(0);
  });

  it('answers 502 when the platform is down', async () => {
    const t = await harness();
    await t.platform.close();
    const res = await t.post(ok);
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('ERR_API_PLATFORM_UNAVAILABLE');
    expect(JSON.stringify(res.json)).not.toContain(API_KEY);
  });
});

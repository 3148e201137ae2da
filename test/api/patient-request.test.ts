/**
 * The contract of PatientRequest (src/api/request/patient-request.ts, issue 25): whatever
 * ends a POST /api/patients, it has exactly one audit end line and is counted
 * exactly once in hospital_api_requests_total, with what the caller got. Each
 * ending is driven through a real server; the fail-closed endings (an end line
 * that cannot be written) are in patients-route.test.ts.
 */
import { connect, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { TOKEN_OK, useHarness, waitForAudit, type Harness } from './harness.js';
import { makeRecord } from './stand-ins.js';

const harness = useHarness();
const ok = { platformCareId: 'care-1', token: TOKEN_OK };

/** The request counts of POST /api/patients, once their total reaches `n` (or after 2 s). */
async function counts(t: Harness, n = 1): Promise<string[]> {
  let found: string[] = [];
  for (let i = 0; i < 200; i++) {
    const text = await (await request(`${t.running.metricsUrl}/metrics`)).body.text();
    found = text.match(/^hospital_api_requests_total\{route="\/api\/patients".*$/gm) ?? [];
    if (found.reduce((sum, l) => sum + Number(l.split(' ').pop()), 0) >= n) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return found;
}

/** Sends one request on a raw socket (so the test decides when the caller leaves). */
function rawPost(t: Harness, requestId: string): Socket {
  const u = new URL(t.url);
  const socket = connect(Number(u.port), u.hostname);
  socket.on('error', () => undefined);
  const body = JSON.stringify(ok);
  socket.write(`POST /api/patients HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${requestId}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  return socket;
}

/** The end lines of one request, as [decision, code, status, aborted]. */
function ends(t: Harness, requestId: string): unknown[][] {
  return t.audit().filter((l) => l.callerRequestId === requestId).map((l) => [l.decision, l.code, l.status, l.aborted]);
}

describe('one end line and one count, whatever ends the request', () => {
  it('a completed record', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 25) }, maxPageSize: 10 } });
    expect((await t.post(ok, { 'x-request-id': 'done-1' })).status).toBe(200);
    expect(ends(t, 'done-1')).toEqual([['granted', null, 200, false]]);
    expect(await counts(t)).toEqual(['hospital_api_requests_total{route="/api/patients",outcome="granted",status="200"} 1']);
  });

  it('an error reply, and a {} reply', async () => {
    const t = await harness({ fhir: { patients: {} } });
    expect((await t.post({ token: TOKEN_OK }, { 'x-request-id': 'bad-1' })).status).toBe(400);
    expect((await t.post(ok, { 'x-request-id': 'none-1' })).json).toEqual({});
    expect(ends(t, 'bad-1')).toEqual([['error', 'ERR_API_BAD_REQUEST', 400, false]]);
    expect(ends(t, 'none-1')).toEqual([['not-found', null, 200, false]]);
    expect(await counts(t, 2)).toEqual([
      'hospital_api_requests_total{route="/api/patients",outcome="error",status="400"} 1',
      'hospital_api_requests_total{route="/api/patients",outcome="not-found",status="200"} 1',
    ]);
  });

  it('a record cut mid-stream by a failing page', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 30) }, maxPageSize: 10, failPage: { page: 2, mode: 'status' } } });
    const socket = rawPost(t, 'cut-1');
    await waitForAudit(t, 1);
    socket.destroy();
    expect(ends(t, 'cut-1')).toEqual([['error', 'ERR_API_FHIR_UNAVAILABLE', 200, true]]);
    expect(await counts(t)).toEqual(['hospital_api_requests_total{route="/api/patients",outcome="error",status="200"} 1']);
  });

  it('an upload the caller abandons mid-body: 499 ERR_API_CALLER_LEFT, as nginx logs a client that closed its request (issue 45)', async () => {
    const t = await harness();
    const u = new URL(t.url);
    const began = new Promise((resolve) => t.running.api.app.server.once('request', resolve));
    const socket = connect(Number(u.port), u.hostname);
    socket.on('error', () => undefined);
    const body = JSON.stringify(ok);
    socket.write(`POST /api/patients HTTP/1.1\r\nHost: x\r\nX-Request-Id: upload-1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
    await began; // the head is read: the request has begun
    socket.destroy();
    await waitForAudit(t, 1);
    expect(ends(t, 'upload-1')).toEqual([['error', 'ERR_API_CALLER_LEFT', 499, true]]);
    expect(await counts(t)).toEqual(['hospital_api_requests_total{route="/api/patients",outcome="error",status="499"} 1']);
    expect(t.platform.seen).toHaveLength(0);
  });

  it('a body that does not arrive within REQUEST_TIMEOUT_MS: node:http answers 408, and so do the line and the count', async () => {
    const t = await harness({ env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '1000' } });
    const u = new URL(t.url);
    const socket = connect(Number(u.port), u.hostname);
    socket.on('error', () => undefined);
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write('POST /api/patients HTTP/1.1\r\nHost: x\r\nX-Request-Id: slow-1\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{');
    await closed;
    expect(received).toMatch(/^HTTP\/1\.1 408/);
    await waitForAudit(t, 1);
    expect(ends(t, 'slow-1')).toEqual([['error', 'ERR_API_REQUEST_TIMEOUT', 408, false]]);
    expect(await counts(t)).toEqual(['hospital_api_requests_total{route="/api/patients",outcome="error",status="408"} 1']);
  });

  it('a caller that leaves mid-record', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 200) }, maxPageSize: 10, delayMs: 30 } });
    const socket = rawPost(t, 'left-1');
    await new Promise((resolve) => socket.once('data', resolve)); // the record has begun
    socket.destroy();
    await waitForAudit(t, 1);
    expect(ends(t, 'left-1')).toEqual([['error', 'ERR_API_ABORTED', 200, true]]);
    expect(await counts(t)).toEqual(['hospital_api_requests_total{route="/api/patients",outcome="error",status="200"} 1']);
  });

  it('a caller that leaves after the last page, before the end line', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 5) } } });
    let socket!: Socket;
    // Every page is written; the caller leaves, and its close is handled, before the record is completed.
    const fhir = t.running.api.context.fhir;
    const everything = fhir.everything.bind(fhir);
    fhir.everything = async (...args) => {
      await everything(...args);
      socket.destroy();
      await waitForAudit(t, 1);
    };
    socket = rawPost(t, 'late-1');
    await waitForAudit(t, 1);
    await new Promise((r) => setTimeout(r, 200)); // room for a second line, were one written
    expect(ends(t, 'late-1')).toEqual([['error', 'ERR_API_ABORTED', 200, true]]);
    expect(await counts(t)).toEqual(['hospital_api_requests_total{route="/api/patients",outcome="error",status="200"} 1']);
  });
});

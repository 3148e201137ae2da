/**
 * Issue 24, admission after authentication: a POST /api/patients takes one of
 * the MAX_CONCURRENT_REQUESTS slots only once its body has arrived and the
 * platform granted its token; past the slots it waits in a FIFO queue bounded
 * by API_QUEUE_LENGTH and API_QUEUE_TIMEOUT_MS, and only past those gets 503
 * ERR_API_BUSY with Retry-After. Real API, platform stand-in and FHIR
 * stand-in on 127.0.0.1; the FHIR stand-in's gate holds requests in their slots.
 */
import { connect, type Socket } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { Admission, AdmissionRefused } from '../../src/api/request/admission.js';
import { until } from '../helpers/until.js';
import { checkMetrics, hasPromtool } from '../monitoring/promtool.js';
import { TOKEN_OK, useHarness, type Harness } from './harness.js';
import { makeRecord } from './stand-ins.js';

const harness = useHarness();
const ok = { platformCareId: 'care-1', token: TOKEN_OK };

/** Holds every FHIR request until opened. */
function gate(): { wait: () => Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { wait: () => opened, open };
}

async function scrape(t: Harness): Promise<string> {
  return (await request(`${t.running.metricsUrl}/metrics`)).body.text();
}

/** The value of one series (`name` or `name{labels}`) in an exposition, or null when absent. */
function series(text: string, name: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? null : Number(line.slice(name.length + 1));
}

const depth = async (t: Harness) => series(await scrape(t), 'hospital_api_admission_queue_depth');

async function queued(t: Harness, n: number): Promise<void> {
  await until(() => depth(t), { what: `${n} requests queued`, ok: (d) => d === n, intervalMs: 20 });
}

async function inSlots(t: Harness, n: number): Promise<void> {
  await until(() => t.fhir.seen.length, { what: `${n} requests in their slots (at the FHIR stand-in)`, ok: (s) => s === n, intervalMs: 20 });
}

describe('the admission queue', () => {
  it('admits in arrival order, refuses past its length, and gives each slot back once', async () => {
    const admission = new Admission({ slots: 1, queueLength: 2, queueTimeoutMs: 60_000 });
    const stays = new AbortController().signal;
    const first = await admission.admit(stays);
    const order: string[] = [];
    const second = admission.admit(stays).then((release) => (order.push('second'), release));
    const third = admission.admit(stays).then((release) => (order.push('third'), release));
    await expect(admission.admit(stays)).rejects.toEqual(new AdmissionRefused('queue-full'));
    first();
    first(); // a second call gives nothing back
    const release2 = await second;
    expect([order, admission.depth]).toEqual([['second'], 1]);
    release2();
    (await third)();
    expect(order).toEqual(['second', 'third']);
    // All three slots given back: one is free again, and nothing is queued.
    (await admission.admit(stays))();
    expect(admission.depth).toBe(0);
  });

  it('lets a waiter that leaves, or waits too long, out of the queue', async () => {
    const admission = new Admission({ slots: 1, queueLength: 1, queueTimeoutMs: 100 });
    const release = await admission.admit(new AbortController().signal);
    const leaving = new AbortController();
    const waiter = admission.admit(leaving.signal);
    expect(admission.depth).toBe(1);
    leaving.abort();
    await expect(waiter).rejects.toEqual(new AdmissionRefused('left'));
    expect(admission.depth).toBe(0);
    await expect(admission.admit(new AbortController().signal)).rejects.toEqual(new AdmissionRefused('timeout'));
    expect(admission.depth).toBe(0);
    release();
  });
});

describe('POST /api/patients admission (issue 24)', () => {
  it('serves an honest caller while 20 others have sent headers and one byte of body', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 2) } } });
    let heads = 0;
    t.running.api.app.server.on('request', () => (heads += 1));
    const { hostname, port } = new URL(t.url);
    const slow: Socket[] = [];
    try {
      for (let i = 0; i < 20; i++) {
        const socket = connect(Number(port), hostname);
        socket.on('error', () => undefined);
        socket.write('POST /api/patients HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');
        slow.push(socket);
      }
      await until(() => heads, { what: '20 slow uploads past their headers', ok: (n) => n >= 20, intervalMs: 20 });
      const res = await t.post(ok);
      expect([res.status, res.json?.error?.code]).toEqual([200, undefined]);
    } finally {
      for (const socket of slow) socket.destroy();
    }
  });

  it('completes 50 concurrent honest requests with 16 slots: 34 wait, none is refused; depth and wait are metrics', async () => {
    const held = gate();
    const t = await harness({ env: { MAX_CONCURRENT_REQUESTS: '16' }, fhir: { records: { p1: makeRecord('p1', 2) }, gate: held.wait } });
    const all = Array.from({ length: 50 }, () => t.post(ok));
    await queued(t, 34);
    await inSlots(t, 16);
    held.open();
    const results = await Promise.all(all);
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    const text = await scrape(t);
    expect(series(text, 'hospital_api_admission_queue_depth')).toBe(0);
    expect(series(text, 'hospital_api_admission_wait_seconds_count{outcome="admitted"}')).toBe(50);
    // The 34 that waited waited more than nothing.
    expect(series(text, 'hospital_api_admission_wait_seconds_sum{outcome="admitted"}')).toBeGreaterThan(0);
    if (hasPromtool) {
      const lint = await checkMetrics(text);
      expect(lint.output).toBe('');
      expect(lint.exitCode).toBe(0);
    }
  });

  /** One request in the only slot and one in the only queue place, both held at FHIR until `held.open()`. */
  async function slotAndQueueTaken() {
    const held = gate();
    const t = await harness({ env: { MAX_CONCURRENT_REQUESTS: '1', API_QUEUE_LENGTH: '1' }, fhir: { records: { p1: makeRecord('p1', 2) }, gate: held.wait } });
    const inSlot = t.post(ok);
    await inSlots(t, 1);
    const waiting = t.post(ok);
    await queued(t, 1);
    return { held, t, inSlot, waiting };
  }

  it('answers 503 ERR_API_BUSY with Retry-After past API_QUEUE_LENGTH, and serves the queued request', async () => {
    const { held, t, inSlot, waiting } = await slotAndQueueTaken();
    const refused = await t.post(ok);
    expect([refused.status, refused.json.error.code, refused.headers['retry-after']]).toEqual([503, 'ERR_API_BUSY', '1']);
    expect(refused.json.error.message).toBe(
      'Too many patient requests: every slot is in use (MAX_CONCURRENT_REQUESTS=1) and the queue is full (API_QUEUE_LENGTH=1); retry after the Retry-After delay',
    );
    held.open();
    expect([(await inSlot).status, (await waiting).status]).toEqual([200, 200]);
    expect(t.fhir.seen.filter((s) => s.url.includes('/Patient?'))).toHaveLength(2); // the refused one never reached FHIR
    expect(series(await scrape(t), 'hospital_api_admission_wait_seconds_count{outcome="queue-full"}')).toBe(1);
  });

  it('answers 503 ERR_API_BUSY with Retry-After past API_QUEUE_TIMEOUT_MS, and takes it out of the queue', async () => {
    const held = gate();
    const t = await harness({
      env: { MAX_CONCURRENT_REQUESTS: '1', API_QUEUE_LENGTH: '4', API_QUEUE_TIMEOUT_MS: '100' },
      fhir: { records: { p1: makeRecord('p1', 2) }, gate: held.wait },
    });
    const inSlot = t.post(ok);
    await inSlots(t, 1);
    const late = await t.post(ok);
    expect([late.status, late.json.error.code, late.headers['retry-after']]).toEqual([503, 'ERR_API_BUSY', '1']);
    expect(late.json.error.message).toContain('this request waited API_QUEUE_TIMEOUT_MS=100 ms without one');
    expect(await depth(t)).toBe(0);
    held.open();
    expect((await inSlot).status).toBe(200);
    expect(t.fhir.seen.filter((s) => s.url.includes('/Patient?'))).toHaveLength(1);
    const ends = t.audit().map((l) => [l.status, l.code]);
    expect(ends).toContainEqual([503, 'ERR_API_BUSY']);
  });

  it('answers a bad token at once while every slot and queue place is taken: it holds neither', async () => {
    const { held, t, inSlot, waiting } = await slotAndQueueTaken();
    for (let i = 0; i < 3; i++) {
      const bad = await t.post({ platformCareId: 'care-1', token: 'Bearer wrong-token' });
      expect([bad.status, bad.json.error.code]).toEqual([400, 'ERR_API_ACCESS_DENIED']);
    }
    expect(await depth(t)).toBe(1);
    held.open();
    expect([(await inSlot).status, (await waiting).status]).toEqual([200, 200]);
  });

  it('takes a queued request whose caller hangs up out of the queue, and audits it as aborted', async () => {
    const held = gate();
    const t = await harness({ env: { MAX_CONCURRENT_REQUESTS: '1', API_QUEUE_LENGTH: '1' }, fhir: { records: { p1: makeRecord('p1', 2) }, gate: held.wait } });
    const inSlot = t.post(ok);
    await inSlots(t, 1);
    const hangUp = new AbortController();
    const leaving = request(`${t.url}/api/patients`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'hangs-up' },
      body: JSON.stringify(ok),
      signal: hangUp.signal,
    }).catch((err: Error) => err.name);
    await queued(t, 1);
    hangUp.abort();
    expect(await leaving).toBe('AbortError');
    await queued(t, 0);
    // Its place is free: the next request queues instead of being refused.
    const next = t.post(ok);
    await queued(t, 1);
    held.open();
    expect([(await inSlot).status, (await next).status]).toEqual([200, 200]);
    await until(() => t.audit().find((l) => l.callerRequestId === 'hangs-up'), { what: 'the audit line of the caller that left' });
    expect(t.audit().find((l) => l.callerRequestId === 'hangs-up')).toMatchObject({ aborted: true, code: 'ERR_API_CALLER_LEFT', status: 499, fhirPatientId: null });
    expect(series(await scrape(t), 'hospital_api_admission_wait_seconds_count{outcome="left"}')).toBe(1);
  });
});

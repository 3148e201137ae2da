/**
 * Issue #12 on the Hospital API: the audit trail fails closed and is on disk
 * before a response ends, a record's `started` line is written before any of
 * its FHIR requests and on disk before its first byte (its sync may overlap the
 * first page's fetch, issue 28; a failed sync sends nothing; SIGKILL mid-stream), bounded work (concurrency, page bytes, stalled
 * callers), listener time-outs and connection cap, /api/ready bounded in time.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync, readFileSync, readSync, rmdirSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { open as fsOpen } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';
import type { AuditFs } from '../../src/api/audit/audit.js';
import { startCli } from '../helpers/cli.js';
import { freePort } from '../../src/util/port-check.js';
import { API_KEY, TOKEN_OK, defaultPlatform, testPki, useHarness, type Harness } from './harness.js';
import { makeRecord, startFhirStandIn, startPlatform } from './stand-ins.js';

const harness = useHarness();

const ok = { platformCareId: 'care-1', token: TOKEN_OK };
const everythingCalls = (t: Harness) => t.fhir.seen.filter((s) => s.url.includes('$everything') || s.url.includes('_getpages')).length;

async function ready(t: Harness): Promise<{ status: number; body: any }> {
  const res = await request(`${t.url}/api/ready`);
  return { status: res.statusCode, body: await res.body.json() };
}

/** A raw TCP client: what it was sent back, and when the server closed it. */
function rawClient(url: string): { socket: Socket; received: () => string; closed: Promise<void> } {
  const u = new URL(url);
  const socket = connect(Number(u.port), u.hostname);
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, received: () => text, closed };
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, new Promise<T>((_r, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);
}

describe('audit trail fails closed', () => {
  it('sends no patient data when the audit log cannot be written (AUDIT_LOG=/dev/full), and /api/ready says so', async () => {
    const t = await harness({ env: { AUDIT_LOG: '/dev/full' }, fhir: { records: { p1: makeRecord('p1', 5) } } });
    for (let i = 0; i < 3; i++) {
      const res = await t.post(ok);
      expect(res.status).toBe(503);
      expect(res.json.error.code).toBe('ERR_API_AUDIT_UNAVAILABLE');
      expect(res.text).not.toContain('Observation');
    }
    expect(everythingCalls(t)).toBe(0);
    const r = await ready(t);
    expect(r.status).toBe(503);
    expect(r.body.error.message).toContain('audit ERR_API_AUDIT_UNAVAILABLE');
  });

  it('names no server path in any error body (the 503 of a failing audit log included)', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 5) } } });
    mkdirSync(t.auditPath); // every open fails (EISDIR), even as root
    const bodies = [
      (await t.post(ok)).text,
      (await t.post({ platformCareId: 'care-1', token: 'Bearer nope' })).text,
      (await t.post('{not json')).text,
      (await t.post({ platformCareId: 'care-1' })).text,
      JSON.stringify((await ready(t)).body),
    ];
    expect(JSON.parse(bodies[0] as string).error.code).toBe('ERR_API_AUDIT_UNAVAILABLE');
    for (const body of bodies) {
      expect(body).not.toContain(t.dir);
      expect(body).not.toContain('audit.log');
      expect(body).not.toMatch(/\/(tmp|var|home|opt|etc|root)\//);
    }
  });

  it('recovers by itself once the audit log is writable again', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 5) } } });
    expect((await t.post(ok)).status).toBe(200);
    // A directory where the log should be: every open fails (EISDIR), even as root.
    t.blockAudit();
    const refused = await t.post(ok);
    expect(refused.status).toBe(503);
    expect(refused.json.error.code).toBe('ERR_API_AUDIT_UNAVAILABLE');
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    const down = await ready(t);
    expect(down.status).toBe(503);
    expect(down.body.error.message).toContain('audit');

    rmdirSync(t.auditPath);
    await new Promise((r) => setTimeout(r, 2_100)); // past the shared readiness result
    const up = await ready(t);
    expect(up).toEqual({ status: 200, body: { platform: 'ok', fhir: 'ok', audit: 'ok' } });
    const again = await t.post(ok);
    expect(again.status).toBe(200);
    expect(again.json.resources).toHaveLength(5);
    const lines = t.auditLines();
    expect(lines.map((l) => l.phase)).toEqual(['probe', 'started', 'end']);
    expect(lines[0]).toMatchObject({ detail: 'readiness check: audit log writable again' });
  });

  /**
   * A disk whose fdatasync of the `started` line waits until the record's first $everything page has been
   * requested (the sync overlaps the fetch), then succeeds or fails with EIO as `syncFails` says. The FHIR
   * stand-in notes, as each $everything request arrives, whether the started line was already in the file.
   */
  async function overlappedSync(syncFails: boolean) {
    let t: Harness | undefined;
    const startedInFileAtFetch: boolean[] = [];
    const fs: AuditFs = {
      async open(path, flags, mode) {
        const handle = await fsOpen(path, flags, mode);
        let started = false;
        return new Proxy(handle, {
          get(target, key) {
            if (key === 'writeFile') {
              return (data: string) => {
                started = data.includes('"phase":"started"');
                return target.writeFile(data);
              };
            }
            if (key === 'datasync' && started) {
              return async () => {
                await until(() => t !== undefined && everythingCalls(t) > 0, { what: 'a page requested while the started line syncs', timeoutMs: 5_000, intervalMs: 10 });
                if (syncFails) throw Object.assign(new Error('EIO'), { code: 'EIO' });
                return target.datasync();
              };
            }
            const value = Reflect.get(target, key, target) as unknown;
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
      },
    };
    t = await harness({
      auditFs: fs,
      fhir: {
        records: { p1: makeRecord('p1', 5) },
        gate: async () => {
          const h = t as Harness;
          if (everythingCalls(h) > startedInFileAtFetch.length) startedInFileAtFetch.push(readFileSync(h.auditPath, 'utf8').includes('"phase":"started"'));
        },
      },
    });
    return { t, res: await t.post(ok), startedInFileAtFetch };
  }

  it('writes the started line before the first FHIR page is requested, and sends the record once its sync succeeded', async () => {
    const { t, res, startedInFileAtFetch } = await overlappedSync(false);
    expect(res.status).toBe(200);
    expect(res.json.resources).toHaveLength(5);
    expect(startedInFileAtFetch).toEqual([true]);
    expect(t.auditLines().map((l) => l.phase)).toEqual(['started', 'end']);
  });

  it('sends no patient data when the started line was written but its sync fails, though its first page was fetched meanwhile', async () => {
    const { t, res, startedInFileAtFetch } = await overlappedSync(true);
    expect(startedInFileAtFetch).toEqual([true]);
    expect(res.status).toBe(503);
    expect(res.json.error.code).toBe('ERR_API_AUDIT_UNAVAILABLE');
    expect(res.text).not.toContain('Observation');
    expect(res.text).not.toContain('"resources"');
  });

  it('has the end line on disk before the caller has the whole response', async () => {
    const t = await harness({ fhir: { records: { p1: makeRecord('p1', 30) }, maxPageSize: 10 } });
    const res = await t.post(ok, { 'x-request-id': 'req-flushed-1' });
    expect(res.status).toBe(200);
    // Read at once, no waiting: the line must already be there.
    const lines = readFileSync(t.auditPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.phase, l.callerRequestId])).toEqual([['started', 'req-flushed-1'], ['end', 'req-flushed-1']]);
    expect(lines[1]).toMatchObject({ decision: 'granted', resources: 30, bytes: Buffer.byteLength(res.text), aborted: false });
    // a refused request too
    const denied = await t.post({ platformCareId: 'care-1', token: 'Bearer nope' }, { 'x-request-id': 'req-flushed-2' });
    expect(denied.status).toBe(400);
    expect(readFileSync(t.auditPath, 'utf8')).toContain('"callerRequestId":"req-flushed-2"');
  });

  it('leaves a started line when the process is killed (SIGKILL) in the middle of a record', async () => {
    const { pki } = testPki();
    const dir = tempDir();
    const platform = await startPlatform(defaultPlatform);
    const fhir = await startFhirStandIn({ tls: pki.server, apiKey: API_KEY, patients: { 'care-1': ['p1'] }, records: { p1: makeRecord('p1', 40) }, maxPageSize: 10, pageDelay: { page: 2, ms: 60_000 } });
    const port = await freePort();
    const child = startCli(['serve', '--host', '127.0.0.1', '--port', String(port)], {
      cwd: dir,
      extendEnv: false,
      env: { PATH: process.env.PATH ?? '', PLATFORM_API_URL: platform.url, FHIR_BASE_URL: fhir.url, FHIR_API_KEY: API_KEY, FHIR_CA_FILE: pki.files.ca, METRICS_LISTEN: 'off', AUDIT_LOG: 'audit.log', LOG_LEVEL: 'silent', PLATFORM_ANY_IDENTIFIER_SYSTEM: 'true' },
    });
    try {
      let up = false;
      for (let i = 0; i < 200 && !up; i++) {
        up = await request(`http://127.0.0.1:${port}/api/health-check`).then((r) => r.body.dump().then(() => true), () => false);
        if (!up) await new Promise((r) => setTimeout(r, 50));
      }
      const c = rawClient(`http://127.0.0.1:${port}`);
      const body = JSON.stringify(ok);
      c.socket.write(`POST /api/patients HTTP/1.1\r\nHost: x\r\nX-Request-Id: killed-1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      // The first page is on the wire; the second hangs.
      for (let i = 0; i < 200 && !c.received().includes('Observation'); i++) await new Promise((r) => setTimeout(r, 25));
      expect(c.received()).toContain('HTTP/1.1 200');
      child.kill('SIGKILL');
      await child;
      await c.closed;
      const lines = readFileSync(join(dir, 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ phase: 'started', callerRequestId: 'killed-1', platformCareId: 'care-1', fhirPatientId: 'p1', decision: 'granted' });
    } finally {
      child.kill('SIGKILL');
      await Promise.all([platform.close(), fhir.close()]);
    }
  });
});

describe('bounded resources', () => {
  it('answers 503 ERR_API_BUSY at once past MAX_CONCURRENT_REQUESTS with no queue (API_QUEUE_LENGTH=0), and serves the others', async () => {
    const t = await harness({ env: { MAX_CONCURRENT_REQUESTS: '2', API_QUEUE_LENGTH: '0' }, fhir: { records: { p1: makeRecord('p1', 3) }, delayMs: 1_500 } });
    const slow = [t.post(ok), t.post(ok)];
    await new Promise((r) => setTimeout(r, 300));
    let slowDone = false;
    void Promise.all(slow).then(() => (slowDone = true));
    const extra = await t.post(ok);
    expect(slowDone).toBe(false); // answered while the two were still running
    expect(extra.status).toBe(503);
    expect(extra.json.error.code).toBe('ERR_API_BUSY');
    expect(extra.headers['retry-after']).toBe('1');
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200]);
    // the slots are released
    expect((await t.post(ok)).status).toBe(200);
  });

  it('refuses a FHIR page larger than FHIR_MAX_PAGE_BYTES instead of buffering it', async () => {
    const t = await harness({ env: { FHIR_MAX_PAGE_BYTES: '4096' }, fhir: { records: { p1: makeRecord('p1', 50) } } });
    const res = await t.post(ok);
    expect(res.status).toBe(502);
    expect(res.json.error.code).toBe('ERR_API_RECORD_TOO_LARGE');
    expect(res.json.error.message).toContain('FHIR_MAX_PAGE_BYTES');
  });

  it('stops fetching pages for a caller that does not read, and cuts it after SEND_TIMEOUT_MS', async () => {
    const t = await harness({ env: { SEND_TIMEOUT_MS: '800', FHIR_PAGE_SIZE: '1000' }, fhir: { records: { p1: makeRecord('p1', 30_000) } } });
    const c = rawClient(t.url);
    c.socket.pause(); // never reads
    const body = JSON.stringify(ok);
    c.socket.write(`POST /api/patients HTTP/1.1\r\nHost: x\r\nX-Request-Id: stalled-1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    for (let i = 0; i < 400 && t.audit().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    const [line] = t.audit();
    expect(line).toMatchObject({ callerRequestId: 'stalled-1', aborted: true, code: 'ERR_API_CLIENT_STALLED', decision: 'error' });
    // 30 pages in the record; only what the socket buffers took, plus one ahead, were fetched.
    expect(everythingCalls(t)).toBeLessThan(30);
    c.socket.destroy();
    // and the API still serves
    expect((await t.post({ platformCareId: 'care-2', token: TOKEN_OK })).status).toBe(200);
  });
});

describe('listener limits', () => {
  /** Writes `first`, then `drip` every `everyMs` until the server closes the connection (within 10 s); what it sent back. */
  async function trickleUntilCut(url: string, first: string, drip: string, everyMs: number): Promise<string> {
    const c = rawClient(url);
    c.socket.write(first);
    const timer = setInterval(() => c.socket.write(drip), everyMs);
    try {
      await within(c.closed, 10_000, 'the trickling client cut');
    } finally {
      clearInterval(timer);
    }
    return c.received();
  }

  it('cuts a client that trickles its body with 408', async () => {
    const t = await harness({ env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '1000' } });
    const received = await trickleUntilCut(t.url, 'POST /api/patients HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{', ' ', 150);
    expect(received).toMatch(/^HTTP\/1\.1 408/);
  });

  it('cuts a client that trickles its headers with 408', async () => {
    const t = await harness({ env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '1000' } });
    const received = await trickleUntilCut(t.url, 'GET /api/health-check HTTP/1.1\r\n', 'X-A: b\r\n', 100);
    expect(received).toMatch(/^HTTP\/1\.1 408/);
  });

  it('at MAX_CONNECTIONS serves a newcomer and closes the connection idle the longest (issue 24)', async () => {
    const t = await harness({ env: { MAX_CONNECTIONS: '2' } });
    const held = [rawClient(t.url), rawClient(t.url)];
    await Promise.all(held.map((c) => new Promise((r) => c.socket.once('connect', r))));
    await new Promise((r) => setTimeout(r, 100));
    const third = rawClient(t.url);
    third.socket.write('GET /api/health-check HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await within(held[0]!.closed, 5_000, 'the idlest connection closed');
    await within(third.closed, 5_000, 'the newcomer answered');
    expect(third.received()).toMatch(/^HTTP\/1\.1 200 /);
    for (const c of held) c.socket.destroy();
    await Promise.all(held.map((c) => c.closed));
    expect((await request(`${t.url}/api/health-check`)).statusCode).toBe(200);
  });

  it('at MAX_CONNECTIONS held uploads make room for an honest caller: the oldest upload is shed (issue 45)', async () => {
    const t = await harness({ env: { MAX_CONNECTIONS: '3' } });
    const server = t.running.api.app.server;
    const uploads: Array<ReturnType<typeof rawClient>> = [];
    for (let i = 0; i < 3; i++) {
      const began = new Promise((r) => server.once('request', r));
      const c = rawClient(t.url);
      c.socket.write('POST /api/patients HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{');
      uploads.push(c);
      await within(began, 5_000, `upload ${i} begun`);
    }
    // every connection has a request in progress: before, the honest caller's connection was reset
    const res = await t.post(ok);
    expect(res.status).toBe(200);
    await within(uploads[0]!.closed, 5_000, 'the oldest upload shed');
    expect(uploads[0]!.received()).toBe('');
    // the shed upload is audited as a caller gone before any answer
    await until(() => t.audit().some((l) => l.code === 'ERR_API_CALLER_LEFT'), { what: 'the shed upload audited' });
    for (const c of uploads) c.socket.destroy();
  });

  it('answers /api/ready within 2 s when the gateway hangs', async () => {
    const t = await harness({ fhir: { delayMs: 20_000 } });
    const started = Date.now();
    const r = await ready(t);
    const elapsed = Date.now() - started;
    expect(r.status).toBe(503);
    expect(r.body.error.message).toMatch(/fhir (timeout|ERR_API_FHIR_TIMEOUT)/);
    expect(elapsed).toBeLessThan(2_000);
  });

  it('answers /api/ready within 2 s when writing the audit log hangs, naming the audit log', async () => {
    const t = await harness();
    // a failed write first (a directory in the log's place), so readiness probes the log again
    t.blockAudit();
    expect((await t.post(ok)).status).toBe(503);
    // then a FIFO with no reader: opening it for writing blocks, as a hung network mount would
    rmdirSync(t.auditPath);
    execFileSync('mkfifo', ['-m', '600', t.auditPath]);
    let unblock: number | null = null;
    try {
      const started = Date.now();
      // bounded here too: an answer that never comes must still reach the finally, or the blocked open
      // would hold one of libuv's threads for the rest of the process
      const r = await within(ready(t), 5_000, '/api/ready');
      const elapsed = Date.now() - started;
      expect(r.status).toBe(503);
      expect(r.body.error.message).toBe('Not ready: platform ok, fhir ok, audit timeout');
      expect(elapsed).toBeLessThan(2_000);
    } finally {
      // a reader releases the blocked open (and the thread it holds)
      unblock = openSync(t.auditPath, constants.O_RDONLY | constants.O_NONBLOCK);
    }
    // keep the reader until the released writer has written its probe line, so its open cannot block again
    const buf = Buffer.alloc(4096);
    let got = '';
    for (let i = 0; i < 300 && !got.includes('probe'); i++) {
      try {
        got += buf.toString('utf8', 0, readSync(unblock, buf));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    closeSync(unblock);
    expect(got).toContain('"phase":"probe"');
  });
});

describe('configuration of the limits', () => {
  it('refuses HEADERS_TIMEOUT_MS above REQUEST_TIMEOUT_MS', async () => {
    const { loadConfig } = await import('../../src/api/server/config.js');
    const dir = tempDir();
    writeFileSync(join(dir, '.env'), '');
    expect(() =>
      loadConfig({}, { PLATFORM_API_URL: 'http://127.0.0.1:1', FHIR_BASE_URL: 'https://127.0.0.1:2/fhir', FHIR_API_KEY: 'k', PLATFORM_IDENTIFIER_SYSTEM: 'urn:x', HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' }, dir),
    ).toThrow(/HEADERS_TIMEOUT_MS/);
  });
});

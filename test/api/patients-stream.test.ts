/**
 * POST /api/patients while the record streams (issue 11): the page loop must stop
 * on the event that matters. Here the caller first stops reading, so the API is
 * waiting for the response to drain, and then goes away: the loop must end on
 * that close at once, not when SEND_TIMEOUT_MS (set far beyond this test's
 * time-out) would cut a stalled caller. (Node emits 'drain' on the response when
 * the caller's socket closes, then the next write finds the response destroyed:
 * removing that check makes this test time out; the 'close' listener of the
 * back-pressure wait is a second guard the test cannot tell apart on Node 22/24.)
 */
import { ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TOKEN_OK, useHarness, waitForAudit } from './harness.js';
import { makeRecord } from './stand-ins.js';

const harness = useHarness();
const ok = { platformCareId: 'care-1', token: TOKEN_OK };

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a caller that leaves while the API waits for it to read', () => {
  it('ends the page loop on the close, long before SEND_TIMEOUT_MS, and keeps serving', { timeout: 30_000 }, async () => {
    const t = await harness({ env: { SEND_TIMEOUT_MS: '120000', REQUEST_TIMEOUT_MS: '120000', KEEP_ALIVE_TIMEOUT_MS: '120000', IDLE_TIMEOUT_MS: '120000', FHIR_PAGE_SIZE: '1000' }, fhir: { records: { p1: makeRecord('p1', 30_000) } } });
    // The event: the API's write to this caller's response reports back-pressure (write() returns false).
    let backPressured!: () => void;
    const waiting = new Promise<void>((resolve) => (backPressured = resolve));
    const write = ServerResponse.prototype.write;
    vi.spyOn(ServerResponse.prototype, 'write').mockImplementation(function (this: ServerResponse, ...args: Parameters<ServerResponse['write']>) {
      const accepted = write.apply(this, args);
      if (!accepted && this.req?.url === '/api/patients') backPressured();
      return accepted;
    });
    const fhir = t.running.api.context.fhir;
    const everything = fhir.everything.bind(fhir);
    let loopEnded: Promise<unknown> | undefined;
    fhir.everything = (...args) => {
      const run = everything(...args);
      loopEnded = run.then(() => 'fetched every page', (err: unknown) => err);
      return run;
    };

    const u = new URL(t.url);
    const socket = connect(Number(u.port), u.hostname);
    socket.on('error', () => undefined);
    socket.pause(); // reads nothing
    const body = JSON.stringify(ok);
    socket.write(`POST /api/patients HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await waiting;
    const fetched = t.fhir.seen.length;
    socket.destroy();

    const outcome = await loopEnded;
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toBe('caller closed the connection');
    const [line] = await waitForAudit(t, 1);
    expect(line).toMatchObject({ decision: 'error', aborted: true, code: 'ERR_API_ABORTED' });
    // nothing fetched after the caller left but the page already in flight
    expect(t.fhir.seen.length).toBeLessThanOrEqual(fetched + 1);
    vi.restoreAllMocks();
    expect((await t.post(ok)).status).toBe(200);
    expect(t.audit(), 'one end line for each of the two requests').toHaveLength(2);
  });
});

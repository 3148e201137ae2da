/**
 * The FHIR server's cooperative scheduling (time-slice.ts, issues 24 and 28), on the real event loop:
 *  - a slicer's budget counts synchronous work only: a wait that let the loop turn (a thread's answer) starts
 *    a new stretch, while the same time spent busy does not;
 *  - turns are handed out one per iteration of the loop, and I/O that arrived during one turn (a request's
 *    bytes on a real socket) is read before the next turn starts.
 */
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { timeSlicer, turns } from '../../../src/fhir/server/time-slice.js';

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // synchronous work, the loop held
  }
}

describe('timeSlicer', () => {
  // The slicer's clock is performance.now: the tests move it by hand, so a test process descheduled on a loaded
  // machine cannot look like work (the wall-clock version failed at load 16). The event loop stays real.
  let now = 0;
  const work = (ms: number): void => {
    now += ms; // synchronous work of `ms`, the loop held
  };
  beforeEach(() => {
    now = 1_000;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('yields once a stretch of synchronous work is over its budget', async () => {
    const tick = timeSlicer(10);
    expect(tick()).toBeUndefined();
    work(9);
    expect(tick()).toBeUndefined();
    work(6);
    const turn = tick();
    expect(turn).toBeInstanceOf(Promise);
    await turn;
    expect(tick()).toBeUndefined(); // a new stretch began at the turn
    work(9);
    expect(tick()).toBeUndefined();
  });

  it('starts a new stretch after an await that let the event loop turn, however long it took', async () => {
    const tick = timeSlicer(50);
    work(30);
    expect(tick()).toBeUndefined();
    now += 60; // e.g. the validation thread's answer, 60 ms later
    await sleep(1); // the loop turns meanwhile
    expect(tick()).toBeUndefined();
    work(10);
    expect(tick()).toBeUndefined(); // 10 ms of work since the wait, not 100 since the start
    work(40);
    expect(tick()).toBeInstanceOf(Promise);
  });

  it('does not count an await that never left the microtask queue as a turn', async () => {
    const tick = timeSlicer(10);
    work(15);
    await Promise.resolve(); // no I/O could run meanwhile
    expect(tick()).toBeInstanceOf(Promise);
  });
});

describe('turns', () => {
  const cleanup: Array<() => void> = [];
  afterEach(() => {
    for (const f of cleanup.splice(0)) f();
  });

  it('resolves waiting callers in order, one per iteration of the loop, reading sockets in between', async () => {
    // a real loopback connection: bytes sent during the first turn are read before the second
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const accepted = once(server, 'connection') as Promise<[Socket]>;
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await once(client, 'connect');
    const [peer] = await accepted;
    cleanup.push(() => {
      client.destroy();
      peer.destroy();
      server.close();
    });

    const order: string[] = [];
    peer.on('data', () => order.push('bytes read'));
    const take = turns();
    const taken = ['first', 'second', 'third'].map((name) =>
      take().then(() => {
        order.push(name);
        if (name === 'first') {
          client.write('request'); // arrives while the first turn holds the loop
          busy(5);
        }
      }),
    );
    await Promise.all(taken);
    await sleep(10);
    expect(order).toEqual(['first', 'bytes read', 'second', 'third']);
  });

  it('serves a caller that comes after the queue ran dry', async () => {
    const take = turns();
    await take();
    await take();
    const both = await Promise.all([take().then(() => 'a'), take().then(() => 'b')]);
    expect(both).toEqual(['a', 'b']);
  });
});

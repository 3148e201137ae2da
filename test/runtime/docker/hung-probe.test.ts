/**
 * The hospital-api container's hung probe (src/runtime/docker/hung-probe.ts),
 * without an engine: the failure count and when it kills, the state line, how
 * it finds docker-init's child in a /proc tree, and that a server which accepts
 * but never answers counts as no answer. What it does in a container is proven
 * by test/docker-engine/hung.test.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { answers, decide, formatState, mainProcess, parseState } from '../../../src/runtime/docker/hung-probe.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

const limits = { failures: 3, startGraceS: 60 };
const servers: Array<Server | TcpServer> = [];
afterAll(() => {
  for (const s of servers) s.close();
  removeTempDirs();
});

const listen = (s: Server | TcpServer): Promise<number> =>
  new Promise((resolve) => {
    servers.push(s);
    s.listen(0, '127.0.0.1', () => resolve((s.address() as { port: number }).port));
  });

describe('hung-probe', () => {
  it('kills after the failures in a row, once the process has answered', () => {
    let s = decide(null, '7:100', 1000, true, limits).state;
    expect(s).toEqual({ key: '7:100', seen: 1000, ok: true, failures: 0 });
    const kills: boolean[] = [];
    for (let i = 1; i <= 3; i++) {
      const d = decide(s, '7:100', 1000 + 5 * i, false, limits);
      s = d.state;
      kills.push(d.kill);
    }
    expect(kills).toEqual([false, false, true]);
    expect(s.failures).toBe(3);
    // one answer resets the run
    expect(decide({ ...s, failures: 2 }, '7:100', 1020, true, limits).state.failures).toBe(0);
    expect(decide(decide({ ...s, failures: 1 }, '7:100', 1020, true, limits).state, '7:100', 1025, false, limits).kill).toBe(false);
  });

  it('gives a process that never answered its start grace, then kills it too', () => {
    let s = decide(null, '7:100', 1000, false, limits).state;
    s = decide(s, '7:100', 1005, false, limits).state;
    const early = decide(s, '7:100', 1010, false, limits);
    expect(early.state.failures).toBe(3);
    expect(early.kill).toBe(false);
    expect(decide(early.state, '7:100', 1060, false, limits).kill).toBe(true);
  });

  it('never carries a count over to a new process (restarted container: same pid, new start time)', () => {
    const old = { key: '7:100', seen: 1000, ok: true, failures: 5 };
    const d = decide(old, '7:900', 2000, false, limits);
    expect(d.state).toEqual({ key: '7:900', seen: 2000, ok: false, failures: 1 });
    expect(d.kill).toBe(false);
  });

  it('reads back what it writes, and ignores a damaged state line', () => {
    const s = { key: '7:100', seen: 1000, ok: true, failures: 2 };
    expect(parseState(formatState(s))).toEqual(s);
    for (const bad of ['', 'x', '7:100 1000 2 1', '7:100 abc 1 1', '7:100 1000 1']) expect(parseState(bad), bad).toBeNull();
  });

  it("finds PID 1's child in /proc (comm with spaces and parentheses), or none", () => {
    const proc = tempDir('hapi-proc-');
    const stat = (pid: number, comm: string, ppid: number, start: number) => {
      mkdirSync(join(proc, String(pid)));
      // fields: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime priority nice threads itreal starttime
      writeFileSync(join(proc, String(pid), 'stat'), `${pid} (${comm}) S ${ppid} 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 ${start} 1000 200\n`);
    };
    stat(1, 'docker-init', 0, 10);
    stat(30, 'sh', 0, 500);
    expect(mainProcess(proc)).toBeNull();
    stat(12, 'node) S 1 (x', 1, 77);
    expect(mainProcess(proc)).toEqual({ pid: 12, key: '12:77' });
  });

  it('counts a server that accepts but never answers as no answer, within the time-out', async () => {
    const ok = await listen(createServer((_req, res) => res.writeHead(503).end()));
    expect(await answers(`http://127.0.0.1:${ok}/api/health-check`, 1000)).toBe(true);
    const hung = await listen(createTcpServer(() => undefined));
    const t0 = Date.now();
    expect(await answers(`http://127.0.0.1:${hung}/api/health-check`, 300)).toBe(false);
    expect(Date.now() - t0).toBeLessThan(5000);
    const closed = await listen(createTcpServer());
    await new Promise((r) => (servers.pop() as TcpServer).close(r));
    expect(await answers(`http://127.0.0.1:${closed}/`, 300)).toBe(false);
  });
});

/**
 * The hospital-api container's hung probe (src/runtime/docker/hung-probe.ts),
 * without an engine: the failure count and when it kills, the state line, how
 * it finds docker-init's child in a /proc tree, and that a server which accepts
 * but never answers counts as no answer. What it does in a container is proven
 * by test/docker-engine/hung.test.ts.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { answers, decide, formatState, mainProcess, parseState, watch, watchedContainer, type WatchedContainer } from '../../../src/runtime/docker/hung-probe.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { until } from '../../helpers/until.js';

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

  it("finds the watched container's processes: its uid, another mount namespace, the oldest first; never its own or other users'", () => {
    const proc = tempDir('hapi-proc-watch-');
    // proc(5): stat (field 22 starttime), status (Uid: real effective saved fs), ns/mnt (a "mnt:[inode]" link, namespaces(7))
    const add = (pid: number, comm: string, uid: number, mnt: string, start: number) => {
      mkdirSync(join(proc, String(pid), 'ns'), { recursive: true });
      writeFileSync(join(proc, String(pid), 'stat'), `${pid} (${comm}) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 ${start} 1000 200\n`);
      writeFileSync(join(proc, String(pid), 'status'), `Name:\t${comm}\nUid:\t${uid}\t${uid}\t${uid}\t${uid}\n`);
      symlinkSync(mnt, join(proc, String(pid), 'ns', 'mnt'));
    };
    const me = 40;
    add(1, 'docker-init', 65534, 'mnt:[100]', 10); // the holder: another uid
    add(9, 'sleep', 65534, 'mnt:[100]', 11);
    add(me, 'node', 65532, 'mnt:[200]', 50); // the watchdog itself
    expect(watchedContainer(proc, me, 65532)).toBeNull();
    add(41, 'sh', 65532, 'mnt:[200]', 60); // a `docker exec` into the watchdog: its own mount namespace
    expect(watchedContainer(proc, me, 65532)).toBeNull();
    add(77, 'java) S 0 (x', 65532, 'mnt:[300]', 700); // HAPI's main process
    add(78, 'java', 65532, 'mnt:[300]', 900);
    add(79, 'id', 0, 'mnt:[300]', 950); // root in HAPI's container: not this uid's to signal
    expect(watchedContainer(proc, me, 65532)).toEqual({ pid: 77, key: '77:700', pids: [77, 78] });
    // a process whose namespace link cannot be read (another user's, proc(5) ptrace access) is skipped
    mkdirSync(join(proc, '80'));
    writeFileSync(join(proc, '80', 'stat'), '80 (x) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 1 1\n');
    writeFileSync(join(proc, '80', 'status'), 'Uid:\t65532\t65532\t65532\t65532\n');
    expect(watchedContainer(proc, me, 65532)?.pids).toEqual([77, 78]);
    // without its own namespace link there is nothing to compare with
    expect(watchedContainer(proc, 12345, 65532)).toBeNull();
  });

  it('finds a real process in another mount namespace on this machine, or none (real /proc)', () => {
    // this test process and its siblings share one mount namespace: none of them is "another container"
    const found = watchedContainer('/proc', process.pid, process.getuid!());
    if (found) for (const pid of found.pids) expect(pid).not.toBe(process.pid);
  });

  it('watch mode: SIGKILLs a real process after the failures in a row against a server that never answers, then watches the next one', async () => {
    const hung = await listen(createTcpServer(() => undefined));
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
    let target: WatchedContainer | null = { pid: child.pid!, key: `${child.pid}:1`, pids: [child.pid!] };
    const lines: string[] = [];
    const stop = new AbortController();
    const loop = watch({
      url: `http://127.0.0.1:${hung}/fhir/metadata`, timeoutMs: 200, intervalMs: 50, limits: { failures: 3, startGraceS: 0 },
      find: () => target, log: (l) => lines.push(l), signal: stop.signal,
    });
    const t0 = Date.now();
    expect(await exited).toBe('SIGKILL');
    // three probes of 200 ms, 50 ms apart: killed on the third, not before
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3 * 200);
    target = null;
    await new Promise((r) => setTimeout(r, 400));
    stop.abort();
    await loop;
    expect(lines[0]).toBe(`hung-probe: watching pid ${child.pid} (1 process(es)) through http://127.0.0.1:${hung}/fhir/metadata`);
    expect(lines.slice(1, 4)).toEqual([
      `hung-probe: no answer from http://127.0.0.1:${hung}/fhir/metadata within 200 ms, 1 probe(s) in a row`,
      `hung-probe: no answer from http://127.0.0.1:${hung}/fhir/metadata within 200 ms, 2 probe(s) in a row`,
      `hung-probe: no answer from http://127.0.0.1:${hung}/fhir/metadata within 200 ms, 3 probe(s) in a row: SIGKILL to pid(s) ${child.pid} so the container restarts`,
    ]);
    // then nothing to watch (the restarting container), said once
    expect(lines.filter((l) => l.includes('nothing to replace'))).toHaveLength(1);
  });

  it('watch mode: leaves a process that answers, and one within its start grace; says when answers come back', async () => {
    let answering = false;
    const flaky = await listen(createServer((_req, res) => (answering ? res.writeHead(200).end() : undefined)));
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      const killed: number[] = [];
      const lines: string[] = [];
      const stop = new AbortController();
      const target = { pid: child.pid!, key: `${child.pid}:1`, pids: [child.pid!] };
      // never answered yet, a long start grace: counted, not killed
      const loop = watch({
        url: `http://127.0.0.1:${flaky}/fhir/metadata`, timeoutMs: 100, intervalMs: 20, limits: { failures: 2, startGraceS: 3600 },
        find: () => target, log: (l) => lines.push(l), kill: (pid) => killed.push(pid), signal: stop.signal,
      });
      await until(() => lines.some((l) => l.includes('4 probe(s) in a row')), { what: 'four failed probes in a row logged', intervalMs: 20 });
      answering = true;
      await until(() => lines.some((l) => / answers, after \d+ probe\(s\) without an answer$/.test(l)), { what: 'the answer logged', intervalMs: 20 });
      stop.abort();
      await loop;
      expect(killed).toEqual([]);
      expect(child.exitCode).toBeNull();
      expect(child.signalCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });
});

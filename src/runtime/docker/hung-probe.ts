/**
 * Replacing a hung component on docker, in two modes sharing one decision
 * (decide) and one probe (answers).
 *
 * Healthcheck mode (the default): the hospital-api container's healthcheck
 * (templates/compose.yaml runs it as `node /app/dist/runtime/docker/hung-probe.js …`):
 * it asks the API for an answer with a short time-out and, after a bounded run of
 * probes without one, SIGKILLs the API process so the container exits and its
 * restart policy starts it again. Docker only marks a container unhealthy; its
 * restart policy acts on the main process exiting, never on health (Docker docs,
 * Dockerfile reference "HEALTHCHECK" and "Start containers automatically").
 *
 * The service runs with `init: true`, so PID 1 is docker-init (tini) and the
 * API is its child (Docker docs, "docker run --init"). The API itself is never
 * PID 1: a namespace's init ignores every signal it has no handler for, SIGKILL
 * from inside the namespace included (pid_namespaces(7), "The namespace init
 * process"). When the child dies, docker-init exits with its status and the
 * engine restarts the container.
 *
 * State (one line in --state, under the container's /tmp) is keyed by the
 * API's pid and start time, so a restarted container never inherits the count:
 *   <pid>:<starttime> <first seen, epoch s> <answered once 0|1> <failures in a row>
 * Before its first answer a process gets --start-grace seconds from the first
 * probe that saw it (a slow start is not a hang).
 *
 * Watch mode (--watch): the hapi-watchdog service, for HAPI, whose image is
 * distroless (no shell, no curl, a JRE only), so no healthcheck can run inside
 * it. The watchdog is a container of its own in the PID namespace HAPI's
 * container joins (both `pid: "service:hapi-pidns"`, a holder that only sleeps;
 * Compose file reference `pid`, Docker docs "docker run --pid container:<name>").
 * It runs as HAPI's uid, so kill(2) lets it signal HAPI's processes with no
 * capability ("the real or effective user ID of the sending process must equal
 * the real or saved set-user-ID of the target process"). It loops: a probe every
 * --interval-s, the same count and start grace as above, kept in memory (its root
 * file system is read-only), and after the failures in a row it SIGKILLs every
 * process of the watched container. HAPI's main process dies, the engine restarts
 * HAPI's container by its policy, and the watchdog, whose namespace belongs to the
 * holder, keeps running and sees a new process (a new key: the count starts at 0).
 * The watched container's processes are those of the watchdog's uid in another
 * mount namespace than its own (a container gets a mount namespace of its own,
 * even when it joins another's PID namespace; /proc/pid/ns/mnt names it,
 * namespaces(7)); the holder runs as another uid.
 *
 * Node built-ins only: this runs every few seconds.
 */
import { readdirSync, readFileSync, readlinkSync, writeFileSync, appendFileSync } from 'node:fs';
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProbeState {
  key: string;
  seen: number;
  ok: boolean;
  failures: number;
}

export interface ProbeDecision {
  state: ProbeState;
  kill: boolean;
}

/** The next state after one probe, and whether the process is to be replaced. */
export function decide(previous: ProbeState | null, key: string, now: number, answered: boolean, limits: { failures: number; startGraceS: number }): ProbeDecision {
  const base = previous && previous.key === key ? previous : { key, seen: now, ok: false, failures: 0 };
  if (answered) return { state: { ...base, ok: true, failures: 0 }, kill: false };
  const state = { ...base, failures: base.failures + 1 };
  const grace = state.ok || now - state.seen >= limits.startGraceS;
  return { state, kill: state.failures >= limits.failures && grace };
}

export function parseState(text: string): ProbeState | null {
  const [key, seen, ok, failures] = text.trim().split(' ');
  if (!key || !/^\d+$/.test(seen ?? '') || !/^[01]$/.test(ok ?? '') || !/^\d+$/.test(failures ?? '')) return null;
  return { key, seen: Number(seen), ok: ok === '1', failures: Number(failures) };
}

export function formatState(s: ProbeState): string {
  return `${s.key} ${s.seen} ${s.ok ? 1 : 0} ${s.failures}\n`;
}

/**
 * The process PID 1 started, as "<pid>:<starttime>" (proc(5), /proc/pid/stat fields 4
 * ppid and 22 starttime; fields counted after the parenthesised comm, which may hold spaces).
 */
export function mainProcess(proc = '/proc'): { pid: number; key: string } | null {
  const pids = readdirSync(proc).filter((n) => /^\d+$/.test(n)).map(Number).sort((a, b) => a - b);
  for (const pid of pids) {
    if (pid === 1 || pid === process.pid) continue;
    const fields = statFields(proc, pid);
    // fields[1] is field 4 (ppid), fields[19] field 22 (starttime)
    if (fields?.[1] === '1') return { pid, key: `${pid}:${fields[19]}` };
  }
  return null;
}

/** The fields of /proc/pid/stat after the parenthesised comm (which may hold spaces); [0] is field 3, state. */
function statFields(proc: string, pid: number): string[] | null {
  try {
    const stat = readFileSync(`${proc}/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** The real uid of a process (proc(5), /proc/pid/status "Uid:" real, effective, saved, fs). */
function realUid(proc: string, pid: number): number | null {
  try {
    const m = /^Uid:\s+(\d+)/m.exec(readFileSync(`${proc}/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

function mountNamespace(proc: string, pid: number | 'self'): string | null {
  try {
    return readlinkSync(`${proc}/${pid}/ns/mnt`);
  } catch {
    return null;
  }
}

export interface WatchedContainer {
  /** The oldest process: the container's main process. */
  pid: number;
  /** "<pid>:<starttime>" of that process: a restarted container is a new key. */
  key: string;
  /** Every process of the container, the main one first. */
  pids: number[];
}

/**
 * The processes, in this PID namespace, of another container running as `uid`:
 * those whose real uid is `uid` and whose mount namespace is not this process's
 * (namespaces(7): /proc/pid/ns/mnt names the namespace; reading it needs the same
 * uid, so other users' processes drop out too). The main process is the oldest
 * (proc(5) stat field 22, starttime; ties by pid). null when there is none.
 */
export function watchedContainer(proc = '/proc', self = process.pid, uid = process.getuid?.() ?? -1): WatchedContainer | null {
  const mine = mountNamespace(proc, self);
  if (mine === null) return null;
  const found: Array<{ pid: number; start: number }> = [];
  for (const name of readdirSync(proc)) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === self || realUid(proc, pid) !== uid) continue;
    const ns = mountNamespace(proc, pid);
    if (ns === null || ns === mine) continue;
    const fields = statFields(proc, pid);
    const start = Number(fields?.[19]);
    if (!Number.isFinite(start)) continue;
    found.push({ pid, start });
  }
  if (found.length === 0) return null;
  found.sort((a, b) => a.start - b.start || a.pid - b.pid);
  const main = found[0]!;
  return { pid: main.pid, key: `${main.pid}:${main.start}`, pids: found.map((p) => p.pid) };
}

export interface WatchOptions {
  url: string;
  timeoutMs: number;
  intervalMs: number;
  limits: { failures: number; startGraceS: number };
  find: () => WatchedContainer | null;
  /** One line of the watchdog's log (its container's stdout). */
  log: (line: string) => void;
  kill?: (pid: number) => void;
  /** Stops the loop (tests); the service's loop runs until the container stops. */
  signal?: AbortSignal;
}

/**
 * Watch mode's loop: probe, decide, and SIGKILL the watched container's processes
 * when decide says so. Logs when it starts watching a process, each failed probe,
 * the kill, and the first answer after failures; nothing while all is well.
 */
export async function watch(o: WatchOptions): Promise<void> {
  const kill = o.kill ?? ((pid: number) => process.kill(pid, 'SIGKILL'));
  let state: ProbeState | null = null;
  let waiting = false;
  while (!o.signal?.aborted) {
    const target = o.find();
    const answered = await answers(o.url, o.timeoutMs);
    if (!target) {
      if (!waiting) o.log(`hung-probe: no process of uid ${process.getuid?.() ?? '?'} in another container of this PID namespace yet (${answered ? 'although' : 'and'} ${o.url} ${answered ? 'answers' : 'does not answer'}): nothing to replace`);
      waiting = true;
      state = null;
    } else {
      waiting = false;
      if (state?.key !== target.key) o.log(`hung-probe: watching pid ${target.pid} (${target.pids.length} process(es)) through ${o.url}`);
      const before: ProbeState | null = state;
      const d = decide(state, target.key, Math.floor(Date.now() / 1000), answered, o.limits);
      state = d.state;
      if (answered && before?.key === target.key && before.failures > 0) o.log(`hung-probe: ${o.url} answers, after ${before.failures} probe(s) without an answer`);
      if (!answered) {
        const line = `hung-probe: no answer from ${o.url} within ${o.timeoutMs} ms, ${state.failures} probe(s) in a row`;
        if (d.kill) {
          o.log(`${line}: SIGKILL to pid(s) ${target.pids.join(' ')} so the container restarts`);
          for (const pid of target.pids) {
            try {
              kill(pid);
            } catch (err) {
              // gone already (ESRCH); EPERM would mean another uid, which watchedContainer excludes
              if ((err as NodeJS.ErrnoException).code !== 'ESRCH') o.log(`hung-probe: SIGKILL to pid ${pid}: ${(err as Error).message}`);
            }
          }
        } else {
          o.log(line);
        }
      }
    }
    await sleep(o.intervalMs, undefined, o.signal ? { signal: o.signal } : undefined).catch(() => undefined);
  }
}

/** True when any HTTP answer arrives within timeoutMs (a process that answers at all is not hung). */
export function answers(url: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(url, { timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      'timeout-ms': { type: 'string', default: '3000' },
      failures: { type: 'string', default: '6' },
      'start-grace': { type: 'string', default: '60' },
      state: { type: 'string', default: '/tmp/hospital-api-health' },
      watch: { type: 'boolean', default: false },
      'interval-s': { type: 'string', default: '5' },
    },
  });
  if (!values.url) {
    process.stderr.write('hung-probe: --url is required\n');
    return 2;
  }
  const limits = { failures: Number(values.failures), startGraceS: Number(values['start-grace']) };
  if (values.watch) {
    const numbers = { 'timeout-ms': values['timeout-ms'], 'interval-s': values['interval-s'], failures: values.failures, 'start-grace': values['start-grace'] };
    const bad = Object.entries(numbers).filter(([, v]) => !/^\d+$/.test(v ?? '') || Number(v) === 0).map(([k]) => `--${k}`);
    if (bad.length) {
      process.stderr.write(`hung-probe: ${bad.join(', ')} must be a whole number above 0\n`);
      return 2;
    }
    const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
    log(`hung-probe: watch mode, every ${values['interval-s']} s, SIGKILL after ${limits.failures} probe(s) in a row without an answer within ${values['timeout-ms']} ms (start grace ${limits.startGraceS} s)`);
    await watch({ url: values.url, timeoutMs: Number(values['timeout-ms']), intervalMs: Number(values['interval-s']) * 1000, limits, find: () => watchedContainer(), log });
    return 0;
  }
  const proc = mainProcess();
  const answered = await answers(values.url, Number(values['timeout-ms']));
  if (!proc) {
    // not under docker-init (no `init: true`): report only, nothing can be replaced from here
    process.stdout.write(answered ? 'answers\n' : `no answer from ${values.url}\n`);
    return answered ? 0 : 1;
  }
  let previous: ProbeState | null = null;
  try {
    previous = parseState(readFileSync(values.state, 'utf8'));
  } catch {
    previous = null;
  }
  const { state, kill } = decide(previous, proc.key, Math.floor(Date.now() / 1000), answered, limits);
  writeFileSync(values.state, formatState(state));
  if (answered) {
    process.stdout.write('answers\n');
    return 0;
  }
  const line = `hung-probe: no answer from ${values.url} within ${values['timeout-ms']} ms, ${state.failures} probe(s) in a row`;
  if (kill) {
    const message = `${line}: SIGKILL to pid ${proc.pid} so the container restarts\n`;
    process.stdout.write(message);
    // into the container's log too (docker-init's stderr); best effort
    try {
      appendFileSync('/proc/1/fd/2', message);
    } catch {
      /* not writable: the message stays in the health log (docker inspect) */
    }
    process.kill(proc.pid, 'SIGKILL');
  } else {
    process.stdout.write(`${line}\n`);
  }
  return 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`hung-probe: ${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}

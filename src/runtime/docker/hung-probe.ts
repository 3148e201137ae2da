/**
 * The hospital-api container's healthcheck (templates/compose.yaml runs it as
 * `node /app/dist/runtime/docker/hung-probe.js …`): it asks the API for an
 * answer with a short time-out and, after a bounded run of probes without one,
 * SIGKILLs the API process so the container exits and its restart policy
 * starts it again. Docker only marks a container unhealthy; its restart policy
 * acts on the main process exiting, never on health (Docker docs, Dockerfile
 * reference "HEALTHCHECK" and "Start containers automatically").
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
 * Node built-ins only: this runs every few seconds.
 */
import { readdirSync, readFileSync, writeFileSync, appendFileSync } from 'node:fs';
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';

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
    let stat: string;
    try {
      stat = readFileSync(`${proc}/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state)
    if (fields[1] === '1') return { pid, key: `${pid}:${fields[19]}` };
  }
  return null;
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
    },
  });
  if (!values.url) {
    process.stderr.write('hung-probe: --url is required\n');
    return 2;
  }
  const limits = { failures: Number(values.failures), startGraceS: Number(values['start-grace']) };
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

/**
 * The supervisor: runs in its own detached process (`hospital-api up
 * --foreground`), spawns each component as a child, waits for its health URL,
 * restarts a crashed one with backoff and records everything in run/state.json.
 * SIGTERM/SIGINT stop it (children first); SIGUSR2 asks it to restart the
 * components named by run/restart-<name>.<token>.request files (one file per
 * request, so concurrent requests never share or lose one).
 *
 * While running it also watches (issue #12): a component that is alive but has
 * not answered its health URL for `hungAfterMs` (a SIGSTOPped or wedged
 * process) is killed and restarted like a crashed one; and the logs are
 * rotated while the components run (copy-truncate past `logRotateBytes`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { HospitalApiError, toHospitalApiError } from '../../errors/index.js';
import { BIN_PATH, COMPONENT_NODE_ARGS, componentSpecs, type ComponentSpec } from './components.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertPortsFree, probe } from './health.js';
import { acquireSupervisorLock, releaseSupervisorLock } from './lock.js';
import { processStartTime, writeRunState, type ComponentRecord, type RunState } from './state.js';

const HEALTH_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 8_000;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30_000;
/** A component that stayed healthy this long has its backoff reset. */
const STABLE_MS = 20_000;
/** Settings the env file must decide, not whatever the supervisor inherited. */
const SCRUBBED_ENV = ['FHIR_API_KEY', 'PLATFORM_API_URL', 'FHIR_BASE_URL', 'FHIR_CA_FILE', 'METRICS_LISTEN'];
/** Never passed on, whoever sets it: it would turn off every component's certificate checks. */
const TLS_OFF_SWITCH = 'NODE_TLS_REJECT_UNAUTHORIZED';

/** Restart requests are `restart-<component>.<token>.request` in run/. */
export const RESTART_REQUEST = /^restart-([a-z]+)\.([A-Za-z0-9-]{1,80})\.request$/;
/** Tokens of handled restart requests kept in state.json for their requesters. */
const HANDLED_KEPT = 50;

/** What a supervisor can be told; production uses the defaults, tests pass shorter times and stand-in components. */
export interface SupervisorOptions {
  /** The executable components are started from (`node <bin> <command> …`). Default: bin/hospital-api.js. */
  componentBin?: string;
  /** How often a running component's health URL is probed. */
  healthEveryMs?: number;
  /** A component alive but not answering its health URL this long is killed and restarted. */
  hungAfterMs?: number;
  /** Logs past this size are rotated while running (copy to .1, truncate). */
  logRotateBytes?: number;
  /** How often log sizes are checked. */
  logCheckEveryMs?: number;
  /** Rotated generations kept (<name>.log.1 … .N). */
  logKeep?: number;
}

const DEFAULTS: Required<SupervisorOptions> = {
  componentBin: BIN_PATH,
  healthEveryMs: 5_000,
  hungAfterMs: 30_000,
  logRotateBytes: 10 * 1024 * 1024,
  logCheckEveryMs: 10_000,
  logKeep: 3,
};

/**
 * Rotates a log the components keep open: copy it to `.1` (older ones shift
 * up to `.keep`), then truncate it in place. The components write with
 * O_APPEND, so they go on at the new end without being restarted. Lines written
 * between the copy and the truncation are lost (logrotate's copytruncate has the
 * same window, of a few milliseconds).
 */
export function rotateLog(path: string, maxBytes: number, keep: number): boolean {
  try {
    if (statSync(path).size <= maxBytes) return false;
  } catch {
    return false; // no log yet
  }
  for (let i = keep - 1; i >= 1; i--) {
    try {
      renameSync(`${path}.${i}`, `${path}.${i + 1}`);
    } catch {
      // that generation does not exist
    }
  }
  copyFileSync(path, `${path}.1`);
  truncateSync(path, 0);
  return true;
}

interface Supervised {
  record: ComponentRecord;
  child: ChildProcess | null;
  /** True while we stop it on purpose, so its exit is not a crash. */
  stopping: boolean;
  failures: number;
  timer: NodeJS.Timeout | null;
  /** True while start() waits for the first health answer (the watch loop leaves it alone). */
  starting: boolean;
  /** Last time the health URL answered (or the start wait ended). */
  lastHealthy: number;
  /** Set when the watch loop killed it for not answering. */
  hung: string | null;
}

export async function runSupervisor(dir: string, config: InstallConfig, options: SupervisorOptions = {}): Promise<number> {
  const opts: Required<SupervisorOptions> = { ...DEFAULTS, ...options };
  const paths = installPaths(dir);
  // Everything the stack creates (logs, FHIR store and WAL, gateway state, run/) is private to
  // the service's user: children inherit this umask.
  process.umask(0o077);
  mkdirSync(paths.logs, { recursive: true, mode: 0o700 });
  mkdirSync(paths.run, { recursive: true, mode: 0o700 });
  const holder = acquireSupervisorLock(dir);
  if (holder !== null) {
    // Another `up` won the race: leave its state alone; our caller waits on it.
    process.stderr.write(`supervisor: another supervisor (pid ${holder}) already runs for ${paths.root}\n`);
    return 0;
  }
  const state: RunState = {
    supervisorPid: process.pid, supervisorStart: processStartTime(process.pid), startedAt: new Date().toISOString(), demo: config.demo, components: [],
  };
  const save = (): void => writeRunState(dir, state);
  const initial = componentSpecs(dir, config);
  try {
    await assertPortsFree(initial);
  } catch (err) {
    const e = toHospitalApiError(err);
    state.fatal = { code: e.code, params: e.params };
    state.stoppedAt = new Date().toISOString();
    save();
    process.stderr.write(`supervisor: ${e.message}\n`);
    releaseSupervisorLock(dir);
    return e.exit;
  }
  const units = new Map<string, Supervised>();
  for (const spec of initial) {
    const record: ComponentRecord = {
      name: spec.name, state: 'starting', detail: 'about to start', pid: null,
      ports: spec.ports.map((p) => p.port), startedAt: null, restarts: 0, version: spec.version,
      log: join(paths.logs, `${spec.name}.log`),
    };
    state.components.push(record);
    units.set(spec.name, { record, child: null, stopping: false, failures: 0, timer: null, starting: false, lastHealthy: Date.now(), hung: null });
  }
  let shuttingDown = false;
  const specOf = (name: string): ComponentSpec | undefined => componentSpecs(dir, config).find((s) => s.name === name);

  const start = async (unit: Supervised): Promise<void> => {
    const spec = specOf(unit.record.name);
    if (!spec || shuttingDown) return;
    if (spec.blocked) {
      Object.assign(unit.record, { state: 'down', detail: spec.blocked, pid: null, startedAt: null });
      return save();
    }
    rotateLog(unit.record.log, opts.logRotateBytes, opts.logKeep);
    const fd = openSync(unit.record.log, 'a', 0o600);
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    for (const key of SCRUBBED_ENV) delete env[key];
    Object.assign(env, spec.env);
    delete env[TLS_OFF_SWITCH];
    const child = spawn(process.execPath, [...COMPONENT_NODE_ARGS, opts.componentBin, ...spec.args], { stdio: ['ignore', fd, fd], env });
    closeSync(fd);
    unit.child = child;
    unit.stopping = false;
    unit.hung = null;
    unit.starting = true;
    Object.assign(unit.record, {
      state: 'starting', detail: `waiting for ${spec.healthUrl}`, pid: child.pid ?? null, pidStart: processStartTime(child.pid), startedAt: new Date().toISOString(),
    });
    save();
    child.once('exit', (code, signal) => onExit(unit, child, code, signal));
    // A failed spawn also emits 'exit' (or never started): record why instead of crashing the supervisor.
    child.once('error', (err) => { unit.record.detail = `cannot start: ${err.message}`; save(); });
    const deadline = Date.now() + HEALTH_TIMEOUT_MS;
    try {
      while (unit.child === child && child.exitCode === null && Date.now() < deadline) {
        if (await probe(spec.healthUrl)) {
          markUp(unit, spec);
          const since = Date.now();
          setTimeout(() => { if (unit.child === child && Date.now() - since >= STABLE_MS) unit.failures = 0; }, STABLE_MS).unref();
          return;
        }
        await sleep(150);
      }
      if (unit.child === child && child.exitCode === null) {
        unit.record.detail = `running but not answering ${spec.healthUrl} after ${HEALTH_TIMEOUT_MS / 1000}s`;
        save();
      }
    } finally {
      if (unit.child === child) {
        unit.starting = false;
        unit.lastHealthy = Date.now();
      }
    }
  };

  const markUp = (unit: Supervised, spec: ComponentSpec): void => {
    unit.lastHealthy = Date.now();
    if (unit.record.state === 'up') return;
    Object.assign(unit.record, { state: 'up', detail: `answering ${spec.healthUrl}` });
    save();
  };

  /**
   * The watch: every running component that has finished starting is probed;
   * one that has not answered for hungAfterMs is killed (SIGKILL: a stopped
   * process ignores SIGTERM) and restarted by onExit like a crashed one.
   */
  const watchHealth = async (): Promise<void> => {
    await Promise.all([...units.values()].map(async (unit) => {
      const child = unit.child;
      if (!child || unit.starting || unit.stopping || shuttingDown || child.exitCode !== null) return;
      const spec = specOf(unit.record.name);
      if (!spec) return;
      if (await probe(spec.healthUrl, Math.min(1_500, opts.hungAfterMs))) {
        if (unit.child === child) markUp(unit, spec);
        return;
      }
      if (unit.child !== child || unit.stopping || shuttingDown) return;
      const silent = Date.now() - unit.lastHealthy;
      if (silent < opts.hungAfterMs) {
        if (unit.record.state === 'up') {
          Object.assign(unit.record, { state: 'starting', detail: `alive but not answering ${spec.healthUrl} for ${Math.round(silent / 1000)}s` });
          save();
        }
        return;
      }
      unit.hung = `alive but did not answer ${spec.healthUrl} for ${Math.round(silent / 1000)}s: killed`;
      process.stderr.write(`supervisor: ${unit.record.name} (pid ${child.pid}) ${unit.hung}\n`);
      child.kill('SIGKILL');
    }));
  };

  const rotateLogs = (): void => {
    const logs = [...units.values()].map((u) => u.record.log);
    logs.push(join(paths.logs, 'supervisor.log'));
    for (const log of logs) {
      try {
        if (rotateLog(log, opts.logRotateBytes, opts.logKeep)) process.stderr.write(`supervisor: rotated ${log}\n`);
      } catch (err) {
        process.stderr.write(`supervisor: cannot rotate ${log}: ${(err as Error).message}\n`);
      }
    }
  };

  const onExit = (unit: Supervised, child: ChildProcess, code: number | null, signal: string | null): void => {
    if (unit.child !== child) return;
    unit.child = null;
    const how = unit.hung ?? (signal ? `killed by ${signal}` : `exited with code ${code}`);
    unit.hung = null;
    if (unit.stopping || shuttingDown) {
      Object.assign(unit.record, { state: 'down', detail: 'stopped', pid: null });
      return save();
    }
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** unit.failures);
    unit.failures += 1;
    unit.record.restarts += 1;
    Object.assign(unit.record, { state: 'restarting', detail: `${how}; restarting in ${delay} ms (see ${unit.record.log})`, pid: null });
    save();
    unit.timer = setTimeout(() => {
      unit.timer = null;
      void restartAfterCrash(unit);
    }, delay);
  };

  const restartAfterCrash = async (unit: Supervised): Promise<void> => {
    const spec = specOf(unit.record.name);
    if (!spec || shuttingDown) return;
    try {
      await assertPortsFree([spec]);
    } catch (err) {
      // Someone else took the port meanwhile: say so, and try again later.
      unit.record.detail = `${(err as Error).message}; retrying`;
      save();
      const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** unit.failures++);
      unit.timer = setTimeout(() => void restartAfterCrash(unit), delay);
      return;
    }
    await start(unit);
  };

  const stop = async (unit: Supervised): Promise<void> => {
    if (unit.timer) clearTimeout(unit.timer);
    unit.timer = null;
    const child = unit.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    unit.stopping = true;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    child.kill('SIGCONT'); // a stopped process handles its SIGTERM only once continued
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<boolean>((r) => { timer = setTimeout(() => r(true), STOP_GRACE_MS); });
    const timedOut = await Promise.race([exited.then(() => false), grace]);
    clearTimeout(timer);
    if (timedOut) {
      child.kill('SIGKILL');
      await exited;
    }
  };

  /**
   * Handles every restart request file present, one scan at a time. A file can
   * vanish between the listing and the read (another scan took it): skipped,
   * never fatal. Requests for the same component found in one scan share one
   * restart; each token is recorded in handledRequests for its requester.
   */
  const handleRestartRequests = async (): Promise<void> => {
    const byComponent = new Map<string, string[]>();
    let files: string[];
    try {
      files = readdirSync(paths.run);
    } catch {
      return;
    }
    for (const file of files) {
      const m = RESTART_REQUEST.exec(file);
      if (!m) continue;
      const path = join(paths.run, file);
      try {
        readFileSync(path);
        rmSync(path);
      } catch {
        continue; // already taken
      }
      const name = m[1] as string;
      byComponent.set(name, [...(byComponent.get(name) ?? []), m[2] as string]);
    }
    for (const [name, tokens] of byComponent) {
      const unit = units.get(name);
      if (!unit || shuttingDown) continue;
      await stop(unit);
      unit.failures = 0;
      await start(unit);
      unit.record.handledRequests = [...(unit.record.handledRequests ?? []), ...tokens].slice(-HANDLED_KEPT);
      unit.record.handledRequest = tokens[tokens.length - 1] as string;
      save();
    }
  };
  let scanning: Promise<void> | null = null;
  let rescan = false;
  const restartRequested = (): Promise<void> => {
    if (scanning) {
      rescan = true;
      return scanning;
    }
    scanning = (async () => {
      do {
        rescan = false;
        try {
          await handleRestartRequests();
        } catch (err) {
          process.stderr.write(`supervisor: restart request failed: ${(err as Error).message}\n`);
        }
      } while (rescan && !shuttingDown);
      scanning = null;
    })();
    return scanning;
  };

  const done = new Promise<number>((resolve) => {
    const shutdown = async (): Promise<void> => {
      if (shuttingDown) return;
      shuttingDown = true;
      await Promise.all([...units.values()].map(stop));
      for (const unit of units.values()) Object.assign(unit.record, { state: 'down', detail: 'stopped', pid: null });
      state.stoppedAt = new Date().toISOString();
      save();
      releaseSupervisorLock(dir);
      resolve(0);
    };
    process.on('SIGTERM', () => void shutdown());
    process.on('SIGINT', () => void shutdown());
    process.on('SIGHUP', () => void shutdown());
  });
  process.on('SIGUSR2', () => void restartRequested());

  save();
  await Promise.all([...units.values()].map(start));
  // The watch: health of running components, restart requests whose signal was missed, log sizes.
  let watching = false;
  const healthTimer = setInterval(() => {
    if (watching || shuttingDown) return;
    watching = true;
    void Promise.all([watchHealth(), restartRequested()]).finally(() => { watching = false; });
  }, opts.healthEveryMs);
  const logTimer = setInterval(rotateLogs, opts.logCheckEveryMs);
  const code = await done;
  clearInterval(healthTimer);
  clearInterval(logTimer);
  return code;
}

/** Thrown by callers that find the supervisor's fatal record. */
export function fatalError(state: RunState): HospitalApiError | null {
  if (!state.fatal) return null;
  try {
    return new HospitalApiError(state.fatal.code as never, state.fatal.params);
  } catch {
    return new HospitalApiError('ERR_RUNTIME_START_FAILED', { component: 'supervisor', detail: state.fatal.code });
  }
}

/**
 * The supervisor: runs in its own detached process (`hospital-api up
 * --foreground`), spawns each component as a child, waits for its health URL,
 * restarts a crashed one with backoff and records everything in run/state.json.
 * SIGTERM/SIGINT stop it (children first); SIGUSR2 asks it to restart the
 * components named by run/restart-<name>.request files.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { InstallConfig } from '../install-config.js';
import { installPaths } from '../layout.js';
import { HospitalApiError, toHospitalApiError } from '../../errors/index.js';
import { componentBin, componentSpecs, type ComponentSpec } from './components.js';
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

/** Past this size a component's log is moved to `<name>.log.1` when the component (re)starts. */
const LOG_ROTATE_BYTES = 10 * 1024 * 1024;

function rotateLog(path: string): void {
  try {
    if (statSync(path).size > LOG_ROTATE_BYTES) renameSync(path, `${path}.1`);
  } catch {
    // no log yet
  }
}

interface Supervised {
  record: ComponentRecord;
  child: ChildProcess | null;
  /** True while we stop it on purpose, so its exit is not a crash. */
  stopping: boolean;
  failures: number;
  timer: NodeJS.Timeout | null;
}

export async function runSupervisor(dir: string, config: InstallConfig): Promise<number> {
  const paths = installPaths(dir);
  mkdirSync(paths.logs, { recursive: true });
  mkdirSync(paths.run, { recursive: true });
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
    units.set(spec.name, { record, child: null, stopping: false, failures: 0, timer: null });
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
    rotateLog(unit.record.log);
    const fd = openSync(unit.record.log, 'a');
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    for (const key of SCRUBBED_ENV) delete env[key];
    Object.assign(env, spec.env);
    delete env[TLS_OFF_SWITCH];
    const child = spawn(process.execPath, [componentBin(), ...spec.args], { stdio: ['ignore', fd, fd], env });
    closeSync(fd);
    unit.child = child;
    unit.stopping = false;
    Object.assign(unit.record, {
      state: 'starting', detail: `waiting for ${spec.healthUrl}`, pid: child.pid ?? null, pidStart: processStartTime(child.pid), startedAt: new Date().toISOString(),
    });
    save();
    child.once('exit', (code, signal) => onExit(unit, child, code, signal));
    // A failed spawn also emits 'exit' (or never started): record why instead of crashing the supervisor.
    child.once('error', (err) => { unit.record.detail = `cannot start: ${err.message}`; save(); });
    const deadline = Date.now() + HEALTH_TIMEOUT_MS;
    while (unit.child === child && child.exitCode === null && Date.now() < deadline) {
      if (await probe(spec.healthUrl)) {
        Object.assign(unit.record, { state: 'up', detail: `answering ${spec.healthUrl}` });
        save();
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
  };

  const onExit = (unit: Supervised, child: ChildProcess, code: number | null, signal: string | null): void => {
    if (unit.child !== child) return;
    unit.child = null;
    const how = signal ? `killed by ${signal}` : `exited with code ${code}`;
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
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<boolean>((r) => { timer = setTimeout(() => r(true), STOP_GRACE_MS); });
    const timedOut = await Promise.race([exited.then(() => false), grace]);
    clearTimeout(timer);
    if (timedOut) {
      child.kill('SIGKILL');
      await exited;
    }
  };

  const restartRequested = async (): Promise<void> => {
    for (const file of readdirSync(paths.run)) {
      const m = /^restart-([a-z]+)\.request$/.exec(file);
      if (!m) continue;
      const token = readFileSync(join(paths.run, file), 'utf8').trim();
      rmSync(join(paths.run, file), { force: true });
      const unit = units.get(m[1] as string);
      if (!unit) continue;
      await stop(unit);
      unit.failures = 0;
      await start(unit);
      unit.record.handledRequest = token;
      save();
    }
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
  return done;
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

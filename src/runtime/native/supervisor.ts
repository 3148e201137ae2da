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
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { readInstallConfig, type InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { HospitalApiError, toHospitalApiError } from '../../errors/index.js';
import { BIN_PATH, COMPONENT_NODE_ARGS, componentSpecs, type ComponentSpec } from './components.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertPortsFree, liveness, probe } from './health.js';
import { acquireSupervisorLock, releaseSupervisorLock } from './lock.js';
import { rotateLog } from './log-rotation.js';
import { takeRestartRequests } from './restart-requests.js';
import { AcceptanceSchedule } from './acceptance-schedule.js';
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

/**
 * Runs the stack until SIGTERM/SIGINT/SIGHUP: takes the supervisor lock, checks
 * the ports, then hands the components to a Supervisor. Returns the exit code.
 */
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
  const initial = componentSpecs(dir, config);
  try {
    await assertPortsFree(initial);
  } catch (err) {
    const e = toHospitalApiError(err);
    state.fatal = { code: e.code, params: e.params };
    state.stoppedAt = new Date().toISOString();
    writeRunState(dir, state);
    process.stderr.write(`supervisor: ${e.message}\n`);
    releaseSupervisorLock(dir);
    return e.exit;
  }
  return new Supervisor(dir, config, opts, state, initial).run();
}

/**
 * One running stack: each component's child process and record, the health
 * watch, crash restarts with backoff, restart requests, log rotation and the
 * shutdown. Every change to a record is saved to run/state.json at once.
 */
class Supervisor {
  private readonly units = new Map<string, Supervised>();
  private readonly logs: string;
  private readonly runDir: string;
  private shuttingDown = false;
  /** The restart-request scan in progress, and whether a signal came during it. */
  private scanning: Promise<void> | null = null;
  private rescan = false;

  private readonly dir: string;
  /** The install's settings: read at start, and again for each requested restart. */
  private config: InstallConfig;
  private readonly opts: Required<SupervisorOptions>;
  private readonly state: RunState;

  constructor(dir: string, config: InstallConfig, opts: Required<SupervisorOptions>, state: RunState, specs: ComponentSpec[]) {
    this.dir = dir;
    this.config = config;
    this.opts = opts;
    this.state = state;
    const paths = installPaths(dir);
    this.logs = paths.logs;
    this.runDir = paths.run;
    for (const spec of specs) {
      const record: ComponentRecord = {
        name: spec.name, state: 'starting', detail: 'about to start', pid: null,
        ports: spec.ports.map((p) => p.port), startedAt: null, restarts: 0, version: spec.version,
        log: join(this.logs, `${spec.name}.log`),
      };
      state.components.push(record);
      this.units.set(spec.name, { record, child: null, stopping: false, failures: 0, timer: null, starting: false, lastHealthy: Date.now(), hung: null });
    }
  }

  /** Starts every component, then watches until a signal stops the stack; resolves to the exit code. */
  async run(): Promise<number> {
    const done = new Promise<number>((resolve) => {
      const stopOn = (): void => void this.shutdown().then((code) => code === null || resolve(code));
      process.on('SIGTERM', stopOn);
      process.on('SIGINT', stopOn);
      process.on('SIGHUP', stopOn);
    });
    process.on('SIGUSR2', () => void this.restartRequested());
    this.save();
    await Promise.all([...this.units.values()].map((u) => this.start(u)));
    // install --verify-every: scheduled acceptance runs (acceptance-schedule.ts), checked at each watch
    const acceptance = new AcceptanceSchedule({
      dir: this.dir,
      bin: this.opts.componentBin,
      env: () => this.childEnv(),
      apiUp: () => this.units.get('api')?.record.state === 'up',
      logRotateBytes: this.opts.logRotateBytes,
      logKeep: this.opts.logKeep,
    });
    acceptance.tick();
    // The watch: health of running components, restart requests whose signal was missed, log sizes.
    let watching = false;
    const healthTimer = setInterval(() => {
      if (watching || this.shuttingDown) return;
      watching = true;
      void Promise.all([this.watchHealth(), this.restartRequested()]).finally(() => {
        watching = false;
        if (!this.shuttingDown) acceptance.tick();
      });
    }, this.opts.healthEveryMs);
    const logTimer = setInterval(() => this.rotateLogs(), this.opts.logCheckEveryMs);
    const code = await done;
    acceptance.stop();
    clearInterval(healthTimer);
    clearInterval(logTimer);
    return code;
  }

  private save(): void {
    writeRunState(this.dir, this.state);
  }

  /** A child's environment: the supervisor's, without the API's secrets and settings, and never with TLS checks off. */
  private childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    for (const key of SCRUBBED_ENV) delete env[key];
    Object.assign(env, extra);
    delete env[TLS_OFF_SWITCH];
    return env;
  }

  private specOf(name: string): ComponentSpec | undefined {
    return componentSpecs(this.dir, this.config).find((s) => s.name === name);
  }

  private async start(unit: Supervised): Promise<void> {
    const spec = this.specOf(unit.record.name);
    if (!spec || this.shuttingDown) return;
    if (spec.blocked) {
      Object.assign(unit.record, { state: 'down', detail: spec.blocked, pid: null, startedAt: null });
      return this.save();
    }
    unit.record.ports = spec.ports.map((p) => p.port);
    rotateLog(unit.record.log, this.opts.logRotateBytes, this.opts.logKeep);
    const fd = openSync(unit.record.log, 'a', 0o600);
    const env = this.childEnv(spec.env);
    const child = spawn(process.execPath, [...COMPONENT_NODE_ARGS, this.opts.componentBin, ...spec.args], { stdio: ['ignore', fd, fd], env });
    closeSync(fd);
    unit.child = child;
    unit.stopping = false;
    unit.hung = null;
    unit.starting = true;
    Object.assign(unit.record, {
      state: 'starting', detail: `waiting for ${spec.healthUrl}`, pid: child.pid ?? null, pidStart: processStartTime(child.pid), startedAt: new Date().toISOString(),
    });
    this.save();
    child.once('exit', (code, signal) => this.onExit(unit, child, code, signal));
    // A failed spawn also emits 'exit' (or never started): record why instead of crashing the supervisor.
    child.once('error', (err) => { unit.record.detail = `cannot start: ${err.message}`; this.save(); });
    const deadline = Date.now() + HEALTH_TIMEOUT_MS;
    try {
      while (unit.child === child && child.exitCode === null && Date.now() < deadline) {
        if (await probe(spec.healthUrl)) {
          this.markUp(unit, spec);
          const since = Date.now();
          setTimeout(() => { if (unit.child === child && Date.now() - since >= STABLE_MS) unit.failures = 0; }, STABLE_MS).unref();
          return;
        }
        await sleep(150);
      }
      if (unit.child === child && child.exitCode === null) {
        unit.record.detail = `running but not answering ${spec.healthUrl} after ${HEALTH_TIMEOUT_MS / 1000}s`;
        this.save();
      }
    } finally {
      if (unit.child === child) {
        unit.starting = false;
        unit.lastHealthy = Date.now();
      }
    }
  }

  private markUp(unit: Supervised, spec: ComponentSpec): void {
    unit.lastHealthy = Date.now();
    if (unit.record.state === 'up') return;
    Object.assign(unit.record, { state: 'up', detail: `answering ${spec.healthUrl}` });
    this.save();
  }

  /**
   * The watch: every running component that has finished starting is probed;
   * one that has not answered for hungAfterMs is killed (SIGKILL: a stopped
   * process ignores SIGTERM) and restarted by onExit like a crashed one.
   */
  private async watchHealth(): Promise<void> {
    await Promise.all([...this.units.values()].map(async (unit) => {
      const child = unit.child;
      if (!child || unit.starting || unit.stopping || this.shuttingDown || child.exitCode !== null) return;
      const spec = this.specOf(unit.record.name);
      if (!spec) return;
      // The probe may take the whole hung window: a component that answers late (busy) is not hung.
      const seen = await liveness(spec.healthUrl, this.opts.hungAfterMs);
      if (seen === 'answered') {
        if (unit.child === child) this.markUp(unit, spec);
        return;
      }
      if (seen === 'busy') {
        // Its event loop closed our connection at a full cap: alive and working, never killed for it.
        if (unit.child === child) unit.lastHealthy = Date.now();
        return;
      }
      if (unit.child !== child || unit.stopping || this.shuttingDown) return;
      const silent = Date.now() - unit.lastHealthy;
      if (silent < this.opts.hungAfterMs) {
        if (unit.record.state === 'up') {
          Object.assign(unit.record, { state: 'starting', detail: `alive but not answering ${spec.healthUrl} for ${Math.round(silent / 1000)}s` });
          this.save();
        }
        return;
      }
      unit.hung = `alive but did not answer ${spec.healthUrl} for ${Math.round(silent / 1000)}s: killed`;
      process.stderr.write(`supervisor: ${unit.record.name} (pid ${child.pid}) ${unit.hung}\n`);
      child.kill('SIGKILL');
    }));
  }

  private rotateLogs(): void {
    const logs = [...this.units.values()].map((u) => u.record.log);
    logs.push(join(this.logs, 'supervisor.log'));
    for (const log of logs) {
      try {
        if (rotateLog(log, this.opts.logRotateBytes, this.opts.logKeep)) process.stderr.write(`supervisor: rotated ${log}\n`);
      } catch (err) {
        process.stderr.write(`supervisor: cannot rotate ${log}: ${(err as Error).message}\n`);
      }
    }
  }

  private onExit(unit: Supervised, child: ChildProcess, code: number | null, signal: string | null): void {
    if (unit.child !== child) return;
    unit.child = null;
    const how = unit.hung ?? (signal ? `killed by ${signal}` : `exited with code ${code}`);
    unit.hung = null;
    if (unit.stopping || this.shuttingDown) {
      Object.assign(unit.record, { state: 'down', detail: 'stopped', pid: null });
      return this.save();
    }
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** unit.failures);
    unit.failures += 1;
    unit.record.restarts += 1;
    Object.assign(unit.record, { state: 'restarting', detail: `${how}; restarting in ${delay} ms (see ${unit.record.log})`, pid: null });
    this.save();
    unit.timer = setTimeout(() => {
      unit.timer = null;
      void this.restartAfterCrash(unit);
    }, delay);
  }

  private async restartAfterCrash(unit: Supervised): Promise<void> {
    const spec = this.specOf(unit.record.name);
    if (!spec || this.shuttingDown) return;
    try {
      await assertPortsFree([spec]);
    } catch (err) {
      // Someone else took the port meanwhile: say so, and try again later.
      unit.record.detail = `${(err as Error).message}; retrying`;
      this.save();
      const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** unit.failures++);
      unit.timer = setTimeout(() => void this.restartAfterCrash(unit), delay);
      return;
    }
    await this.start(unit);
  }

  private async stop(unit: Supervised): Promise<void> {
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
  }

  /**
   * Handles every restart request file present, one scan at a time. Requests
   * for the same component found in one scan share one restart; each token is
   * recorded in handledRequests for its requester.
   */
  private async handleRestartRequests(): Promise<void> {
    const requests = takeRestartRequests(this.runDir);
    // A requested restart starts the component with the install's current settings: `install
    // --monitoring` / `--no-monitoring` on a running stack restarts the gateway to open or close its
    // status listener (issue 48). An install.json that cannot be read keeps the settings in use.
    if (requests.size > 0) {
      try {
        this.config = readInstallConfig(this.dir);
      } catch (err) {
        process.stderr.write(`supervisor: keeping the settings in use: ${(err as Error).message}\n`);
      }
    }
    for (const [name, tokens] of requests) {
      const unit = this.units.get(name);
      if (!unit || this.shuttingDown) continue;
      await this.stop(unit);
      unit.failures = 0;
      await this.start(unit);
      unit.record.handledRequests = [...(unit.record.handledRequests ?? []), ...tokens].slice(-HANDLED_KEPT);
      unit.record.handledRequest = tokens[tokens.length - 1] as string;
      this.save();
    }
  }

  /** One scan at a time; a signal during a scan makes it scan again when done. */
  private restartRequested(): Promise<void> {
    if (this.scanning) {
      this.rescan = true;
      return this.scanning;
    }
    this.scanning = (async () => {
      do {
        this.rescan = false;
        try {
          await this.handleRestartRequests();
        } catch (err) {
          process.stderr.write(`supervisor: restart request failed: ${(err as Error).message}\n`);
        }
      } while (this.rescan && !this.shuttingDown);
      this.scanning = null;
    })();
    return this.scanning;
  }

  /** Stops every component (children first), records the stop and frees the lock: 0, or null when already shutting down. */
  private async shutdown(): Promise<number | null> {
    if (this.shuttingDown) return null;
    this.shuttingDown = true;
    await Promise.all([...this.units.values()].map((u) => this.stop(u)));
    for (const unit of this.units.values()) Object.assign(unit.record, { state: 'down', detail: 'stopped', pid: null });
    this.state.stoppedAt = new Date().toISOString();
    this.save();
    releaseSupervisorLock(this.dir);
    return 0;
  }
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

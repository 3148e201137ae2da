/**
 * The client side of the supervisor: start it detached and wait until every
 * component settles, stop it (SIGTERM, bounded wait, SIGKILL of its process
 * group), and ask it to restart one component.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { HospitalApiError } from '../../errors/index.js';
import { isPortFree } from '../../util/port-check.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { BIN_PATH, componentSpecs } from './components.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertPortsFree } from './health.js';
import { isOurs, readRunState, runningSupervisor, statePath, type RunState } from './state.js';
import { fatalError } from './supervisor.js';

const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 15_000;
const FAIL_FAST_RESTARTS = 3;

/** Settled: up, or down for a stated reason (the API without its key). */
function settled(state: RunState): boolean {
  return state.components.length > 0 && state.components.every((c) => c.state === 'up' || (c.state === 'down' && c.pid === null && c.startedAt === null));
}

async function waitSettled(dir: string, timeoutMs: number): Promise<RunState> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = readRunState(dir);
    if (state) {
      const fatal = fatalError(state);
      if (fatal) throw fatal;
      if (state.stoppedAt || !isOurs(state.supervisorPid, state.supervisorStart)) {
        throw new HospitalApiError('ERR_RUNTIME_START_FAILED', {
          component: 'supervisor', dir, detail: `it exited; see ${join(installPaths(dir).logs, 'supervisor.log')}`,
        });
      }
      if (settled(state)) return state;
      // Crashing on every start will not settle: fail now rather than at the time-out.
      const failing = state.components.find((c) => c.state !== 'up' && c.restarts >= FAIL_FAST_RESTARTS);
      if (failing) {
        throw new HospitalApiError('ERR_RUNTIME_START_FAILED', { component: failing.name, dir, detail: `${failing.detail.split(';')[0]} (${failing.restarts} restarts)` });
      }
    }
    if (Date.now() > deadline) {
      const waiting = state?.components.filter((c) => c.state !== 'up').map((c) => `${c.name} (${c.detail})`) ?? ['supervisor'];
      throw new HospitalApiError('ERR_RUNTIME_TIMEOUT', { seconds: timeoutMs / 1000, what: waiting.join(', '), dir });
    }
    await sleep(150);
  }
}

export interface StartOptions {
  timeoutMs?: number;
  /**
   * Arguments to `node` that run the supervisor. Default: this CLI's
   * `up --foreground --dir <dir>`. The supervisor's own tests pass a launcher
   * that calls runSupervisor() with stand-in components and short times.
   */
  supervisorArgs?: string[];
}

/**
 * Install directories hold patient data, keys and logs: private to the
 * service's user (folders 0700; data, logs, keys and settings 0600). The
 * supervisor's umask (077) keeps what the stack creates private; this fixes
 * what was created before (older installs, files written by other commands)
 * at each start. Certificates (*.pem) and signed records are not secret and
 * keep their mode, behind the private folders.
 */
export function makeInstallPrivate(dir: string): void {
  const paths = installPaths(dir);
  for (const d of [paths.root, paths.logs, paths.run]) mkdirSync(d, { recursive: true, mode: 0o700 });
  const tighten = (path: string, recursive: boolean): void => {
    let st;
    try {
      st = lstatSync(path);
    } catch {
      return;
    }
    if (st.isSymbolicLink()) return;
    if (st.isDirectory()) {
      if ((st.mode & 0o777) !== 0o700) chmodSync(path, 0o700);
      if (recursive) for (const name of readdirSync(path)) tighten(join(path, name), true);
    } else if (st.isFile() && (st.mode & 0o077) !== 0) {
      chmodSync(path, st.mode & 0o700);
    }
  };
  tighten(paths.root, false);
  for (const d of [paths.fhirData, paths.logs, paths.run, paths.secrets, join(paths.root, 'gateway'), join(paths.root, 'demo')]) tighten(d, true);
  tighten(paths.tls, false);
  for (const f of [paths.installJson, paths.apiEnv, paths.gatewayKey, paths.caKey, paths.signerKey, paths.auditSealKey]) tighten(f, false);
}

/** Starts the supervisor unless it already runs; resolves once every component settles. */
export async function startStack(dir: string, config: InstallConfig, options: StartOptions = {}): Promise<RunState> {
  const timeoutMs = options.timeoutMs ?? START_TIMEOUT_MS;
  const paths = installPaths(dir);
  if (runningSupervisor(dir)) {
    makeInstallPrivate(dir); // files written since the stack started (demo files, settings)
    return waitSettled(dir, timeoutMs);
  }
  // Two `up` runs at once probe the same ports (each bind is brief but can collide): on a taken
  // port, look again after a moment, by when the other run's supervisor may be the one holding it.
  for (let attempt = 1; ; attempt++) {
    try {
      await assertPortsFree(componentSpecs(dir, config));
      break;
    } catch (err) {
      if (attempt >= 3) throw err;
      await sleep(200 + Math.floor(Math.random() * 300));
      if (runningSupervisor(dir)) return waitSettled(dir, timeoutMs);
    }
  }
  makeInstallPrivate(dir);
  rmSync(statePath(dir), { force: true });
  const fd = openSync(join(paths.logs, 'supervisor.log'), 'a', 0o600);
  // detached: its own session and process group, so it outlives this command and
  // `down` can signal the whole group.
  const args = options.supervisorArgs ?? [BIN_PATH, 'up', '--foreground', '--dir', paths.root];
  const child = spawn(process.execPath, args, {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, NO_COLOR: '1' },
  });
  closeSync(fd);
  child.unref();
  try {
    return await waitSettled(dir, timeoutMs);
  } catch (err) {
    // We started it, so a failed `up` leaves nothing running behind it.
    await stopStack(dir).catch(() => undefined);
    throw err;
  }
}

/** Stops the supervisor and every component; true when something was running. */
export async function stopStack(dir: string, timeoutMs = STOP_TIMEOUT_MS): Promise<boolean> {
  const state = readRunState(dir);
  if (!state) return false;
  // Only processes this install started (pid and start time as recorded): a stale
  // state.json may name pids that now belong to something else.
  const mine = state.components.filter((c) => isOurs(c.pid, c.pidStart));
  const pids = mine.map((c) => c.pid as number);
  const supervisorOurs = (): boolean => isOurs(state.supervisorPid, state.supervisorStart);
  const supervisor = !state.stoppedAt && supervisorOurs() ? state.supervisorPid : null;
  const stillOurs = (): number[] => mine.filter((c) => isOurs(c.pid, c.pidStart)).map((c) => c.pid as number);
  if (!supervisor && pids.length === 0) return false;
  if (supervisor) process.kill(supervisor, 'SIGTERM');
  else for (const pid of pids) process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + timeoutMs;
  const alive = (): boolean => (supervisor !== null && supervisorOurs()) || stillOurs().length > 0;
  while (alive() && Date.now() < deadline) await sleep(100);
  if (alive()) {
    // Bounded wait is over: kill the group (supervisor and its children) outright, checked again just before.
    if (supervisor && supervisorOurs()) try { process.kill(-supervisor, 'SIGKILL'); } catch { /* gone */ }
    for (const pid of stillOurs()) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    await sleep(200);
  }
  if (alive()) throw new HospitalApiError('ERR_RUNTIME_STOP_FAILED', { what: 'the native stack', detail: `pids ${pids.join(', ')} still alive` });
  await waitPortsReleased(state, deadline);
  return true;
}

async function waitPortsReleased(state: RunState, deadline: number): Promise<void> {
  const ports = state.components.flatMap((c) => c.ports);
  for (const port of ports) {
    while (!(await isPortFree(port)) && Date.now() < deadline + 5_000) await sleep(100);
  }
}

/** Asks the running supervisor to restart one component and waits for it to settle. */
export async function requestRestart(dir: string, component: string, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  const state = runningSupervisor(dir);
  if (!state) throw new HospitalApiError('ERR_RUNTIME_NOT_RUNNING', { dir: installPaths(dir).root });
  const known = state.components.map((c) => c.name);
  if (!known.includes(component)) {
    throw new HospitalApiError('ERR_RUNTIME_UNKNOWN_COMPONENT', { component, known: known.join(', ') });
  }
  // One file per request (its token in the name): concurrent requests never overwrite each other.
  const token = `${Date.now()}-${process.pid}-${randomBytes(6).toString('hex')}`;
  writeFileAtomic(join(installPaths(dir).run, `restart-${component}.${token}.request`), token + '\n', { mode: 0o600 });
  process.kill(state.supervisorPid, 'SIGUSR2');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await sleep(150);
    const now = runningSupervisor(dir);
    if (!now) throw new HospitalApiError('ERR_RUNTIME_NOT_RUNNING', { dir: installPaths(dir).root });
    const c = now.components.find((x) => x.name === component);
    const handled = !!c && (c.handledRequests?.includes(token) || c.handledRequest === token);
    // Handled: done once it settles (a later request may be restarting it again meanwhile).
    if (handled && (c.state === 'up' || c.state === 'down')) return;
    if (handled && (c.state === 'restarting' || Date.now() > deadline)) {
      throw new HospitalApiError('ERR_RUNTIME_START_FAILED', { component, dir, detail: c.detail });
    }
    if (Date.now() > deadline) {
      throw new HospitalApiError('ERR_RUNTIME_TIMEOUT', { seconds: timeoutMs / 1000, what: `${component} to restart`, dir });
    }
  }
}

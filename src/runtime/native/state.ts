/**
 * The supervisor's record in <dir>/run/state.json: pids, ports, start times,
 * restarts and versions. Only the supervisor writes it (atomically); up, down,
 * status and verify read it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { installPaths } from '../../install-dir/layout.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { readJsonFile } from '../../util/json-file.js';
import type { ComponentState } from '../types.js';
import type { ErrorParams } from '../../errors/index.js';

export interface ComponentRecord {
  name: string;
  state: ComponentState['state'];
  detail: string;
  pid: number | null;
  ports: number[];
  /** ISO 8601, when the current process was spawned. */
  startedAt: string | null;
  /** The kernel's start time of `pid` (see processStartTime), so a reused pid is never taken for ours. */
  pidStart?: string | null;
  restarts: number;
  version: string;
  log: string;
  /** The last restart request handled (its token). */
  handledRequest?: string;
  /** The tokens of the last restart requests handled, so each requester knows its own is done. */
  handledRequests?: string[];
}

export interface RunState {
  supervisorPid: number;
  /** processStartTime(supervisorPid), recorded by the supervisor itself. */
  supervisorStart?: string | null;
  startedAt: string;
  stoppedAt?: string;
  demo: boolean;
  components: ComponentRecord[];
  /** Set when the supervisor gave up before starting (e.g. a port is taken). */
  fatal?: { code: string; params: ErrorParams };
}

export function statePath(dir: string): string {
  return join(installPaths(dir).run, 'state.json');
}

const nullableString = { type: ['string', 'null'] } as const;

/** run/state.json as the supervisor writes it. */
export const RUN_STATE_SCHEMA = {
  type: 'object',
  required: ['supervisorPid', 'startedAt', 'components'],
  properties: {
    supervisorPid: { type: 'integer', minimum: 1 },
    supervisorStart: nullableString,
    startedAt: { type: 'string' },
    stoppedAt: { type: 'string' },
    demo: { type: 'boolean' },
    components: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name', 'state', 'detail', 'pid', 'ports', 'startedAt', 'restarts', 'version', 'log'],
        properties: {
          name: { type: 'string', pattern: '^[a-z]+$' },
          state: { enum: ['up', 'starting', 'restarting', 'down', 'exited'] },
          detail: { type: 'string' },
          pid: { type: ['integer', 'null'], minimum: 1 },
          ports: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 65535 } },
          startedAt: nullableString,
          pidStart: nullableString,
          restarts: { type: 'integer', minimum: 0 },
          version: { type: 'string' },
          log: { type: 'string' },
          handledRequest: { type: 'string' },
          handledRequests: { type: 'array', items: { type: 'string' } },
        },
      },
    },
    fatal: { type: 'object', required: ['code', 'params'], properties: { code: { type: 'string' }, params: { type: 'object' } } },
  },
} as const;

/**
 * The state file, or null when there is none. The supervisor writes it
 * atomically, so a file that does not match its schema was damaged or edited:
 * @throws ERR_FILE_READ naming the file and the field
 */
export function readRunState(dir: string): RunState | null {
  const path = statePath(dir);
  if (!existsSync(path)) return null;
  try {
    return readJsonFile<RunState>(path, RUN_STATE_SCHEMA);
  } catch (err) {
    // Replaced between the check and the read: the supervisor is stopping or starting.
    if ((err as { params?: { detail?: string } }).params?.detail === 'ENOENT') return null;
    throw err;
  }
}

export function writeRunState(dir: string, state: RunState): void {
  writeFileAtomic(statePath(dir), JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
}

/** Linux: a zombie (exited, not yet reaped by its parent, e.g. init) still answers signal 0. */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false; // no procfs: trust signal 0
  }
}

/** True when a process with this pid runs (signal 0 probes without sending). */
export function isAlive(pid: number | null | undefined): boolean {
  if (!pid || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/**
 * Linux: when the process started, in clock ticks since boot (/proc/<pid>/stat
 * field 22). Constant for a process's life, different for a later one with the
 * same pid. Null without procfs or when the pid does not exist.
 */
export function processStartTime(pid: number | null | undefined): string | null {
  if (!pid || pid <= 0) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // fields after "(comm)": state is field 3, starttime field 22
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

const hasProcfs = existsSync('/proc/self/stat');

/**
 * True when `pid` runs AND is the process the state file recorded: a stale
 * state.json must never make `down` signal whatever now has that pid. A record
 * without a start time (or one that differs) is not ours.
 */
export function isOurs(pid: number | null | undefined, recordedStart: string | null | undefined): pid is number {
  if (!isAlive(pid)) return false;
  if (!hasProcfs) return true; // no way to tell apart: signal 0 is all there is
  return !!recordedStart && processStartTime(pid) === recordedStart;
}

/** The state file's supervisor, when it still runs. */
export function runningSupervisor(dir: string): RunState | null {
  const state = readRunState(dir);
  return state && !state.stoppedAt && isOurs(state.supervisorPid, state.supervisorStart) ? state : null;
}

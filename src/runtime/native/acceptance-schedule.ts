/**
 * Scheduled acceptance under the native supervisor (issue 46): every
 * `install --verify-every` seconds, once the Hospital API is up, the
 * supervisor runs `hospital-api verify --scheduled` as a child of its own,
 * its output appended to logs/acceptance.log. The interval is read from
 * install.json at every tick, so `install --verify-every` (or `off`) on a
 * running stack takes effect without a restart. One run at a time: a run that
 * outlasts the interval delays the next rather than overlapping it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { readInstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { COMPONENT_NODE_ARGS } from './components.js';
import { rotateLog } from './log-rotation.js';

export const ACCEPTANCE_LOG = 'acceptance.log';

export interface AcceptanceScheduleOptions {
  dir: string;
  /** The CLI the run is started from (the supervisor's componentBin). */
  bin: string;
  /** The environment a component gets (secrets scrubbed, TLS checks never off). */
  env: () => NodeJS.ProcessEnv;
  /** Whether the Hospital API is up now: no run before it is (no key yet, nothing to accept). */
  apiUp: () => boolean;
  logRotateBytes: number;
  logKeep: number;
}

export class AcceptanceSchedule {
  private running: ChildProcess | null = null;
  private lastStart = 0;

  constructor(private readonly o: AcceptanceScheduleOptions) {}

  /** The seconds between runs install.json asks for now, or null: off (also when it cannot be read). */
  private everyS(): number | null {
    try {
      return readInstallConfig(this.o.dir).verifyEvery ?? null;
    } catch {
      return null;
    }
  }

  /** Starts a run when one is due; called by the supervisor's watch. */
  tick(now = Date.now()): void {
    const every = this.everyS();
    if (every === null || this.running || !this.o.apiUp()) return;
    if (this.lastStart !== 0 && now - this.lastStart < every * 1000) return;
    this.lastStart = now;
    const log = join(installPaths(this.o.dir).logs, ACCEPTANCE_LOG);
    rotateLog(log, this.o.logRotateBytes, this.o.logKeep);
    const fd = openSync(log, 'a', 0o600);
    const child = spawn(process.execPath, [...COMPONENT_NODE_ARGS, this.o.bin, 'verify', '--scheduled', '--dir', installPaths(this.o.dir).root], {
      stdio: ['ignore', fd, fd],
      env: this.o.env(),
    });
    closeSync(fd);
    this.running = child;
    const done = (): void => {
      if (this.running === child) this.running = null;
    };
    child.once('exit', done);
    child.once('error', done);
  }

  /** Stops a run in progress (the supervisor is shutting down): its record is written whole or not at all. */
  stop(): void {
    this.running?.kill('SIGTERM');
  }
}

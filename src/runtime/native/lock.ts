/**
 * One supervisor per install directory: `<dir>/run/supervisor.lock` holds the
 * owner's pid, created exclusively (link(2) of a file that already holds the
 * pid, so the lock never exists without its owner).
 *
 * A lock whose pid no longer runs is stale (a supervisor killed with SIGKILL
 * cannot remove it) and is taken over. The takeover is atomic: removing the
 * stale lock happens under a second exclusive file (`supervisor.lock.takeover`)
 * and only if the lock still names the dead pid that was judged stale, so a
 * process can never remove a lock another process has just taken; then every
 * contender races on the same exclusive link and exactly one wins.
 */
import { linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { installPaths } from '../layout.js';
import { isAlive } from './state.js';

function lockPath(dir: string): string {
  return join(installPaths(dir).run, 'supervisor.lock');
}

function owner(path: string): number {
  try {
    return Number(readFileSync(path, 'utf8').trim()) || 0;
  } catch {
    return 0;
  }
}

function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Creates `path` holding our pid, exclusively; false when it exists. */
function createExclusive(path: string): boolean {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${process.pid}\n`, { mode: 0o600 });
  try {
    linkSync(tmp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return false;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/**
 * Removes the lock if it still names `stalePid`, under the takeover guard.
 * Returns false when another process holds the guard (try again shortly).
 */
function removeStale(path: string, stalePid: number): boolean {
  const guard = `${path}.takeover`;
  if (!createExclusive(guard)) {
    // A guard whose holder died in the few instructions it is held: clear it.
    const holder = owner(guard);
    if (holder && !isAlive(holder)) rmSync(guard, { force: true });
    return false;
  }
  try {
    if (owner(path) === stalePid) rmSync(path, { force: true });
    return true;
  } finally {
    rmSync(guard, { force: true });
  }
}

/** The pid of the supervisor that holds the lock, or null when this process now holds it. */
export function acquireSupervisorLock(dir: string): number | null {
  const path = lockPath(dir);
  for (let attempt = 0; attempt < 200; attempt++) {
    if (createExclusive(path)) return null;
    const pid = owner(path);
    if (pid === process.pid) return null;
    if (pid && isAlive(pid)) return pid;
    if (!pid) {
      pause(5); // vanished between link and read: look again
      continue;
    }
    if (!removeStale(path, pid)) pause(5);
  }
  return owner(path) || -1;
}

export function releaseSupervisorLock(dir: string): void {
  const path = lockPath(dir);
  if (owner(path) === process.pid) rmSync(path, { force: true });
}

/**
 * One supervisor per install directory: `<dir>/run/supervisor.lock` holds the
 * owner's pid, created exclusively. A lock whose pid no longer runs is stale
 * and taken over (a supervisor killed with SIGKILL cannot remove it).
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

/** The pid of the supervisor that holds the lock, or null when this process now holds it. */
export function acquireSupervisorLock(dir: string): number | null {
  const path = lockPath(dir);
  for (let attempt = 0; attempt < 3; attempt++) {
    // Write the pid to a private file, then link it into place: the lock never exists without its pid.
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${process.pid}\n`);
    try {
      linkSync(tmp, path);
      return null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = owner(path);
      if (pid === process.pid) return null;
      if (pid && isAlive(pid)) return pid;
      rmSync(path, { force: true }); // stale
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  return owner(path) || -1;
}

export function releaseSupervisorLock(dir: string): void {
  const path = lockPath(dir);
  if (owner(path) === process.pid) rmSync(path, { force: true });
}

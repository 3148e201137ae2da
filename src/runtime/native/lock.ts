/**
 * One supervisor per install directory: `<dir>/run/supervisor.lock` holds the
 * owner's pid, created exclusively (link(2) of a file that already holds the
 * pid, so the lock never exists without its owner).
 *
 * A lock whose pid no longer runs is stale (a supervisor killed with SIGKILL
 * cannot remove it) and is taken over. The takeover is atomic: only the
 * process that creates the exclusive marker `supervisor.lock.takeover-<dead
 * pid>` may remove the lock, and only while it still names that pid, so a
 * process can never remove a lock another process has just taken; then every
 * contender races on the same exclusive link and exactly one wins. A marker
 * whose creator died before finishing passes the right on to
 * `<marker>-<its pid>`, again exclusive: no marker is ever removed while a
 * takeover may use it (a "remove the stale guard" step would have the same
 * race as the lock), and the lock's new holder clears them afterwards.
 */
import { linkSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { installPaths } from '../../install-dir/layout.js';
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
 * Removes the lock if it still names `stalePid`, when this process holds the
 * right to (the marker chain above). Returns false when a live process holds
 * that right (try again shortly).
 */
function removeStale(path: string, stalePid: number): boolean {
  let marker = `${path}.takeover-${stalePid}`;
  for (let depth = 0; depth < 32; depth++) {
    if (createExclusive(marker)) {
      if (owner(path) === stalePid) rmSync(path, { force: true });
      return true;
    }
    const holder = owner(marker);
    if (!holder || holder === process.pid) return true; // cleared by a new holder, or ours from before: look again
    if (isAlive(holder)) return false;
    marker = `${marker}-${holder}`; // its taker died mid-way: the right passes on
  }
  return false;
}

/** The lock's new holder clears the takeover markers (none can still be needed: the stale lock is gone). */
function clearMarkers(path: string): void {
  const prefix = `${basename(path)}.takeover-`;
  // Not the `.tmp` files a contender is about to link into place (createExclusive).
  for (const f of readdirSync(dirname(path))) if (f.startsWith(prefix) && !f.endsWith('.tmp')) rmSync(join(dirname(path), f), { force: true });
}

/** The pid of the supervisor that holds the lock, or null when this process now holds it. */
export function acquireSupervisorLock(dir: string): number | null {
  const path = lockPath(dir);
  for (let attempt = 0; attempt < 200; attempt++) {
    if (createExclusive(path)) {
      clearMarkers(path);
      return null;
    }
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

/**
 * Log rotation for logs the components keep open (the supervisor rotates each
 * component's log before starting it, and every few seconds while it runs).
 */
import { copyFileSync, renameSync, statSync, truncateSync } from 'node:fs';

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

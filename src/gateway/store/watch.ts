/**
 * Follows the state file from another process. The admin process replaces the
 * file by rename, so the directory is watched (a watch on the file itself
 * would stay on the old inode). Bursts are debounced; a file that cannot be
 * read, parsed or validated (validateState) is not applied: the last good
 * snapshot stays in force and `onError` is told why (once per bad version of
 * the file), so the process can say so.
 */
import { watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { ConfigSnapshot } from '../model/types.js';
import { loadSnapshotFromFile } from './state-file.js';

// Only the final rename carries our file name (temp files are filtered out), so a short debounce suffices.
const DEBOUNCE_MS = 5;

/** Calls `listener` with each new version of the file; returns the stop function. */
export function watchStateFile(
  statePath: string,
  listener: (snapshot: ConfigSnapshot) => void,
  onError?: (err: Error) => void,
): () => void {
  let lastError: string | null = null;
  let lastVersion: number | null = null;
  try {
    lastVersion = loadSnapshotFromFile(statePath).version;
  } catch {
    lastVersion = null;
  }
  const reload = (): void => {
    let snapshot: ConfigSnapshot;
    try {
      snapshot = loadSnapshotFromFile(statePath);
    } catch (err) {
      const message = (err as Error).message;
      if (message !== lastError) onError?.(err as Error);
      lastError = message;
      return;
    }
    lastError = null;
    if (snapshot.version === lastVersion) return;
    lastVersion = snapshot.version;
    listener(snapshot);
  };
  return followFile(statePath, reload);
}

/**
 * Calls `changed` (debounced) after each event on the state file's name in its
 * directory (the file is replaced by rename, so the directory is watched);
 * returns the stop function. The caller decides what changed (GatewayStore follow mode).
 */
export function followFile(statePath: string, changed: () => void): () => void {
  const name = basename(statePath);
  let timer: NodeJS.Timeout | undefined;
  const watcher = watch(dirname(statePath), { persistent: false }, (_event, file) => {
    if (file !== null && file !== name) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      changed();
    }, DEBOUNCE_MS);
  });
  watcher.on('error', () => undefined);
  return () => {
    if (timer) clearTimeout(timer);
    watcher.close();
  };
}

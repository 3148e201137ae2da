/**
 * The gateway's configuration store: the whole configuration in memory, one
 * JSON state file on disk (issue 3: "state persists in one file, written
 * atomically"). A change runs on a private copy and commits only if it
 * validates AND the file write succeeds; then `version` goes up by one and
 * subscribers (the in-process proxy) see the new snapshot on their next request.
 * Other processes read the file instead: loadSnapshotFromFile (watchStateFile follows it).
 *
 * `follow: true` (`hospital-api gateway --follow-state`) makes the store follow
 * the file too, as a Kong node follows its shared database (kong.conf.default
 * db_update_frequency): a new version another process writes there becomes the
 * snapshot, and a change made here is made on top of the newest file (it is
 * reread first when it changed on disk). A file that cannot be read or does not
 * validate is not applied: the last good snapshot stays, and `followError()`
 * says why until a good version arrives.
 */
import { existsSync, statSync } from 'node:fs';
import { deepFreeze } from '../model/config.js';
import type { ConfigSnapshot, GatewayConfig } from '../model/types.js';
import { loadSnapshotFromFile, writeState } from './state-file.js';
import { followFile } from './watch.js';

export { loadSnapshotFromFile } from './state-file.js';
export { watchStateFile } from './watch.js';
export { validateState, type StateValidation } from './validate-state.js';

export type SnapshotListener = (snapshot: ConfigSnapshot) => void;

export interface GatewayStore {
  readonly statePath: string;
  /** The current read-only configuration; replaced (never mutated) on each commit. */
  snapshot(): ConfigSnapshot;
  /** Called after every commit; returns the unsubscribe function. */
  subscribe(listener: SnapshotListener): () => void;
  /**
   * Runs `change` on a private deep copy of the configuration. If it throws,
   * nothing changes (memory and file); otherwise the copy is written to the
   * state file and becomes the snapshot. Returns what `change` returned.
   * @throws whatever `change` throws; ERR_FILE_WRITE if the state file cannot be written
   */
  transact<T>(change: (draft: GatewayConfig) => T): T;
  /** Replaces the whole configuration at once (POST /config). */
  replace(config: GatewayConfig): ConfigSnapshot;
  /** Following the file (`follow: true`): why its newest version was not applied, or null. Always null otherwise. */
  followError(): string | null;
  /** Stops following the file (no-op otherwise). */
  close(): void;
}

export interface StoreOptions {
  /** Follow the file: adopt each new version another process writes there (see above). */
  follow?: boolean;
  /** Told once per bad version of a followed file (the gateway logs it). */
  onFollowError?: (err: Error) => void;
}

/** What identifies one write of the file: a rename gives a new inode, a rewrite a new mtime or size. */
function fileStamp(path: string): string | null {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.mtimeMs}:${s.size}`;
  } catch {
    return null;
  }
}

/** Opens (or creates, empty) the state file. @throws ERR_GATEWAY_STATE_INVALID, ERR_FILE_READ, ERR_FILE_WRITE */
export async function openStore(statePath: string, options: StoreOptions = {}): Promise<GatewayStore> {
  let current = loadSnapshotFromFile(statePath);
  // Create the file up front so other processes reading it (export, health checks) find something to read.
  if (!existsSync(statePath)) writeState(statePath, current.version, current.config);
  const listeners = new Set<SnapshotListener>();
  let stamp = fileStamp(statePath);
  let followError: string | null = null;

  function publish(snapshot: ConfigSnapshot): void {
    current = snapshot;
    for (const listener of [...listeners]) {
      try {
        listener(current);
      } catch {
        // A listener's failure must not undo a committed change.
      }
    }
  }

  /** Following: a version of the file other than the one in memory becomes the snapshot. */
  function adopt(snapshot: ConfigSnapshot): void {
    followError = null;
    if (snapshot.version !== current.version) publish(snapshot);
  }

  function refuse(err: Error): void {
    if (followError !== err.message) options.onFollowError?.(err);
    followError = err.message;
  }

  /** Following: reread the file now if it changed on disk since it was last read or written here. */
  function refresh(): void {
    const now = fileStamp(statePath);
    if (now === stamp) return;
    stamp = now;
    try {
      adopt(loadSnapshotFromFile(statePath));
    } catch (err) {
      // the change is made on the last good version, and its write replaces the bad file
      refuse(err as Error);
    }
  }

  function commit(config: GatewayConfig): ConfigSnapshot {
    const version = current.version + 1;
    writeState(statePath, version, config); // throws before anything changes
    stamp = fileStamp(statePath);
    followError = null;
    publish(deepFreeze({ version, config }));
    return current;
  }

  const stopWatching = options.follow ? followFile(statePath, refresh) : () => undefined;

  return {
    statePath,
    snapshot: () => current,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    followError: () => followError,
    close: stopWatching,
    transact(change) {
      if (options.follow) refresh();
      const draft = structuredClone(current.config) as GatewayConfig;
      const result = change(draft);
      commit(draft);
      return result;
    },
    replace(config) {
      if (options.follow) refresh();
      return commit(structuredClone(config));
    },
  };
}

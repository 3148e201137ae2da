/**
 * The gateway's configuration store: the whole configuration in memory, one
 * JSON state file on disk (issue 3: "state persists in one file, written
 * atomically"). A change runs on a private copy and commits only if it
 * validates AND the file write succeeds; then `version` goes up by one and
 * subscribers (the in-process proxy) see the new snapshot on their next request.
 * Other processes read the file instead: loadSnapshotFromFile (watchStateFile follows it).
 */
import { existsSync } from 'node:fs';
import { deepFreeze } from '../model/config.js';
import type { ConfigSnapshot, GatewayConfig } from '../model/types.js';
import { loadSnapshotFromFile, writeState } from './state-file.js';

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
}

/** Opens (or creates, empty) the state file. @throws ERR_GATEWAY_STATE_INVALID, ERR_FILE_READ, ERR_FILE_WRITE */
export async function openStore(statePath: string): Promise<GatewayStore> {
  let current = loadSnapshotFromFile(statePath);
  // Create the file up front so other processes reading it (export, health checks) find something to read.
  if (!existsSync(statePath)) writeState(statePath, current.version, current.config);
  const listeners = new Set<SnapshotListener>();

  function commit(config: GatewayConfig): ConfigSnapshot {
    const version = current.version + 1;
    writeState(statePath, version, config); // throws before anything changes
    current = deepFreeze({ version, config });
    for (const listener of [...listeners]) {
      try {
        listener(current);
      } catch {
        // A listener's failure must not undo a committed change.
      }
    }
    return current;
  }

  return {
    statePath,
    snapshot: () => current,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    transact(change) {
      const draft = structuredClone(current.config) as GatewayConfig;
      const result = change(draft);
      commit(draft);
      return result;
    },
    replace(config) {
      return commit(structuredClone(config));
    },
  };
}

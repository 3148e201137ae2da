/**
 * The API's answer to a key reload (SIGHUP), as both runtimes read it: the API
 * writes src/api/fhir/key-reload.ts ReloadStatus to a file by rename; the runtime
 * removes the old file, sends the signal, and waits here for an answer that is
 * the one it asked for (native: the pid it signalled; docker: written after
 * the signal was sent, since the container's pid is its own namespace's).
 */
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ReloadStatus } from '../api/fhir/key-reload.js';
import { HospitalApiError } from '../errors/index.js';
import type { ApiKeyReload } from './types.js';

export const RELOAD_TIMEOUT_MS = 30_000;

/** What the CLI reports of a status: every field but the writer's pid and time. */
export function reloadAnswer(s: ReloadStatus): ApiKeyReload {
  return {
    keyFingerprint: s.keyFingerprint,
    gateway: s.gateway,
    ...(s.error ? { error: s.error } : {}),
    ...(s.caFingerprint === undefined ? {} : { caFingerprint: s.caFingerprint }),
  };
}

/**
 * Polls `path` until it holds a status `ours` accepts.
 * @throws ERR_KEY_RELOAD_FAILED after RELOAD_TIMEOUT_MS, naming `who`
 */
export async function awaitReloadStatus(path: string, ours: (s: ReloadStatus) => boolean, who: string, timeoutMs = RELOAD_TIMEOUT_MS): Promise<ApiKeyReload> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await sleep(50);
    if (!existsSync(path)) continue;
    try {
      const s = JSON.parse(readFileSync(path, 'utf8')) as ReloadStatus;
      if (ours(s)) return reloadAnswer(s);
    } catch {
      // written by rename, so a parse failure is an older or foreign writer: keep waiting
    }
  }
  throw new HospitalApiError('ERR_KEY_RELOAD_FAILED', { detail: `no answer from ${who} within ${timeoutMs / 1000}s` });
}

/**
 * What the native supervisor recorded starting (run/state.json), read without
 * install.json: `down` stops it when install.json is damaged or missing, and
 * `upgrade` refuses to run while it runs. The
 * docker runtime records nothing of its own (the engine knows its containers).
 */
import { existsSync } from 'node:fs';
import { stopStack } from './control.js';
import { runningSupervisor, statePath } from './state.js';
import type { RecordedStack } from '../types.js';

/** The processes a runtime recorded starting in `dir`, or null when none did. */
export function recordedStack(dir: string): RecordedStack | null {
  const file = statePath(dir);
  return existsSync(file) ? { runtime: 'native', file, running: () => runningSupervisor(dir) !== null, stop: () => stopStack(dir) } : null;
}

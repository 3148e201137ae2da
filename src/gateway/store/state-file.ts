/**
 * The gateway state file: one JSON document `{format, version, config}`,
 * written write-temp-then-rename (src/util/atomic-write.ts) with mode 0600,
 * since it holds key-auth keys.
 */
import { readFileSync } from 'node:fs';
import { HospitalApiError } from '../../errors/index.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { deepFreeze, emptyConfig } from '../model/config.js';
import type { ConfigSnapshot, GatewayConfig } from '../model/types.js';
import { STATE_FORMAT, validateState } from './validate-state.js';

export { STATE_FORMAT };

export function serializeState(version: number, config: GatewayConfig): string {
  return `${JSON.stringify({ format: STATE_FORMAT, version, config }, null, 1)}\n`;
}

export function writeState(path: string, version: number, config: GatewayConfig): void {
  writeFileAtomic(path, serializeState(version, config), { mode: 0o600 });
}

/**
 * Parses and schema-checks a state file's text (validateState); a missing
 * collection is read as empty. The error names the file and every bad field.
 * @throws ERR_GATEWAY_STATE_INVALID
 */
export function parseState(path: string, text: string): ConfigSnapshot {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new HospitalApiError('ERR_GATEWAY_STATE_INVALID', { path, detail: (err as Error).message });
  }
  const result = validateState(doc);
  if (!result.ok) {
    const shown = result.errors.slice(0, 10).join('; ');
    const more = result.errors.length > 10 ? ` (and ${result.errors.length - 10} more)` : '';
    throw new HospitalApiError('ERR_GATEWAY_STATE_INVALID', { path, detail: `${shown}${more}` });
  }
  return deepFreeze({ version: result.version, config: result.config });
}

/** Reads the state file; a missing file is an empty configuration at version 0. @throws ERR_GATEWAY_STATE_INVALID, ERR_FILE_READ */
export function loadSnapshotFromFile(statePath: string): ConfigSnapshot {
  let text: string;
  try {
    text = readFileSync(statePath, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return deepFreeze({ version: 0, config: emptyConfig() });
    throw new HospitalApiError('ERR_FILE_READ', { path: statePath, detail: (err as Error).message }, { cause: err });
  }
  return parseState(statePath, text);
}

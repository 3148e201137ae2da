/**
 * The gateway state file: one JSON document `{format, version, config}`,
 * written write-temp-then-rename (src/util/atomic-write.ts) with mode 0600,
 * since it holds key-auth keys.
 */
import { readFileSync } from 'node:fs';
import { HospitalApiError } from '../../errors/index.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { COLLECTIONS, deepFreeze, emptyConfig } from '../model/config.js';
import type { ConfigSnapshot, GatewayConfig } from '../model/types.js';

export const STATE_FORMAT = 'hospital-api-gateway-state/1';

export function serializeState(version: number, config: GatewayConfig): string {
  return `${JSON.stringify({ format: STATE_FORMAT, version, config }, null, 1)}\n`;
}

export function writeState(path: string, version: number, config: GatewayConfig): void {
  writeFileAtomic(path, serializeState(version, config), { mode: 0o600 });
}

/** Parses a state file's text; a missing collection is read as empty. @throws ERR_GATEWAY_STATE_INVALID */
export function parseState(path: string, text: string): ConfigSnapshot {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new HospitalApiError('ERR_GATEWAY_STATE_INVALID', { path, detail: (err as Error).message });
  }
  const d = doc as { format?: unknown; version?: unknown; config?: unknown };
  if (typeof doc !== 'object' || doc === null || d.format !== STATE_FORMAT) {
    throw new HospitalApiError('ERR_GATEWAY_STATE_INVALID', { path, detail: `expected "format": "${STATE_FORMAT}"` });
  }
  if (typeof d.version !== 'number' || !Number.isInteger(d.version) || d.version < 0) {
    throw new HospitalApiError('ERR_GATEWAY_STATE_INVALID', { path, detail: 'version must be a non-negative integer' });
  }
  const raw = (typeof d.config === 'object' && d.config !== null ? d.config : {}) as Record<string, unknown>;
  const config = emptyConfig();
  for (const name of COLLECTIONS) {
    const list = raw[name];
    if (list === undefined) continue;
    if (!Array.isArray(list)) throw new HospitalApiError('ERR_GATEWAY_STATE_INVALID', { path, detail: `${name} must be an array` });
    (config[name] as unknown[]) = list;
  }
  return deepFreeze({ version: d.version, config });
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

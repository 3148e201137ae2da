/**
 * Reads a .env file with Node's own parser (util.parseEnv, Node 20.12+).
 * Values already in the environment win over the file, as dotenv does.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { HospitalApiError } from '../errors/index.js';

export function readEnvFile(path: string): Record<string, string> {
  if (!existsSync(path)) return {};
  try {
    return parseEnv(readFileSync(path, 'utf8')) as Record<string, string>;
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as Error).message }, { cause: err });
  }
}

/** The effective settings: the file's values overlaid by the process environment. */
export function mergedEnv(path: string, env: NodeJS.ProcessEnv = process.env): Record<string, string | undefined> {
  return { ...readEnvFile(path), ...env };
}

/** Serialises settings as a .env file; values are double-quoted and escaped. */
export function formatEnvFile(values: Record<string, string>, header?: string): string {
  const lines = header ? header.split('\n').map((l) => `# ${l}`) : [];
  for (const [key, value] of Object.entries(values)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(key)) throw new Error(`invalid variable name ${key}`);
    const escaped = value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
    lines.push(`${key}="${escaped}"`);
  }
  return lines.join('\n') + '\n';
}

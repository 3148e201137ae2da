/**
 * Reads a .env file with Node's own parser (util.parseEnv).
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

/**
 * Characters a value may hold and still be written bare (API keys, URLs, paths): none of them is read
 * specially by util.parseEnv, systemd's EnvironmentFile or Compose's env_file (no quote, `#`, `$`,
 * backslash or space). A bare key is what `grep FHIR_API_KEY hospital-api.env` shows, without quotes to send.
 */
const BARE = /^[A-Za-z0-9_.\/:+=@,-]+$/;

/**
 * Writes a value so util.parseEnv reads it back unchanged: bare when it needs no quoting, else quoted.
 * Node's parser has no escapes inside quotes (only `\n` expansion in double quotes), so pick a quote
 * character the value does not contain; single quotes are fully literal. Files written quoted by
 * older versions read the same.
 */
function quote(key: string, value: string): string {
  if (/[\r\n]/.test(value)) throw new Error(`value of ${key} must be a single line`);
  if (BARE.test(value)) return value;
  if (!value.includes("'")) return `'${value}'`;
  if (!value.includes('"') && !value.includes('\\n')) return `"${value}"`;
  if (!value.includes('`')) return `\`${value}\``;
  throw new Error(`value of ${key} contains every quote character`);
}

/** Serialises settings as a .env file that util.parseEnv reads back unchanged. */
export function formatEnvFile(values: Record<string, string>, header?: string): string {
  const lines = header ? header.split('\n').map((l) => `# ${l}`) : [];
  for (const [key, value] of Object.entries(values)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(key)) throw new Error(`invalid variable name ${key}`);
    lines.push(`${key}=${quote(key, value)}`);
  }
  return lines.join('\n') + '\n';
}

/** Reads and follows the per-component logs in <dir>/logs/ (`hospital-api logs`). */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import type { LogsOptions } from '../types.js';
import { componentSpecs } from './components.js';
import { setTimeout as sleep } from 'node:timers/promises';

export function logPath(dir: string, component: string): string {
  return join(installPaths(dir).logs, `${component}.log`);
}

function readRange(path: string, from: number, to: number): string {
  if (to <= from) return '';
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(to - from);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, from + off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** The last `lines` lines of a log ('' when it does not exist yet). */
export function tailLog(path: string, lines: number): string {
  if (!existsSync(path)) return '';
  const size = statSync(path).size;
  const text = readRange(path, Math.max(0, size - 256 * 1024), size);
  const all = text.split('\n');
  if (all[all.length - 1] === '') all.pop();
  return all.slice(-lines).join('\n') + (all.length ? '\n' : '');
}

/** Calls `write` with what is appended to each log until `signal` aborts. */
export async function followLogs(paths: Record<string, string>, write: (name: string, text: string) => void, signal: AbortSignal): Promise<void> {
  const offsets = new Map(Object.entries(paths).map(([n, p]) => [n, existsSync(p) ? statSync(p).size : 0]));
  while (!signal.aborted) {
    for (const [name, path] of Object.entries(paths)) {
      if (!existsSync(path)) continue;
      const size = statSync(path).size;
      let from = offsets.get(name) ?? 0;
      if (size < from) from = 0; // truncated or replaced
      if (size > from) write(name, readRange(path, from, size));
      offsets.set(name, size);
    }
    await sleep(250);
  }
}

/** The native runtime's logs(): each component's file and the supervisor's. */
export async function nativeLogs(dir: string, config: InstallConfig, o: LogsOptions): Promise<void> {
  const known = [...componentSpecs(dir, config).map((s) => s.name), 'supervisor'];
  const wanted = o.component ? [o.component] : known;
  for (const name of wanted) {
    if (!known.includes(name)) throw new HospitalApiError('ERR_RUNTIME_UNKNOWN_COMPONENT', { component: name, known: known.join(', ') });
  }
  const paths = Object.fromEntries(wanted.map((n) => [n, logPath(dir, n)]));
  for (const [name, path] of Object.entries(paths)) {
    const text = tailLog(path, o.lines);
    if (text) o.write(name, text);
  }
  if (o.follow) await followLogs(paths, o.write, o.signal);
}

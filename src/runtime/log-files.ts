/**
 * Reading and following log files (`hospital-api logs`): the native
 * components' own logs and, on every runtime, the Hospital API's audit log;
 * and the whole-line cut the container runtimes' followed logs share.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

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


/** Whole lines only: a chunk can end inside a line, whose rest comes with the next one. */
export function byLines(write: (text: string) => void): (chunk: string | Buffer) => void {
  let held = '';
  return (chunk) => {
    const text = held + chunk.toString();
    const end = text.lastIndexOf('\n');
    held = text.slice(end + 1);
    if (end >= 0) write(text.slice(0, end + 1));
  };
}

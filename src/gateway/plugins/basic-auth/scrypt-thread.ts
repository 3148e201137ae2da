/**
 * The thread basic-auth's scrypt checks run on: one worker_thread per proxy
 * process, lowered to nice 10 (Linux: a thread's nice value is its own,
 * set through its thread id from /proc/thread-self). Under contention the
 * scheduler then gives a flood of password guesses about a tenth of what the
 * proxy's own threads get (CFS weight 110 against 1024), so wrong passwords
 * cannot take the CPU from other traffic; on an idle machine checks run at
 * full speed. The thread is created on first use and keeps the process alive
 * only while a check is in progress. Stored hashes other than the scrypt form (Kong's SHA-1) are cheap
 * and checked by model/password.ts on the caller's side.
 */
import { Worker } from 'node:worker_threads';

/** The scrypt form of model/password.ts: `scrypt$N$r$p$<salt b64>$<hash b64>`. */
const SCRYPT_FORM = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/;
export const SCRYPT_NICE = 10;

export interface ScryptParams {
  n: number;
  r: number;
  p: number;
  salt: string;
  hash: string;
}

/** The parameters of a stored scrypt hash with sane costs, or null (then the caller falls back to model/password.ts). */
export function scryptParams(stored: string): ScryptParams | null {
  const m = SCRYPT_FORM.exec(stored);
  if (!m) return null;
  const [n, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (n < 2 || n > 1 << 20 || (n & (n - 1)) !== 0 || r < 1 || r > 32 || p < 1 || p > 16) return null;
  return { n, r, p, salt: m[4] as string, hash: m[5] as string };
}

// Plain CommonJS so it runs the same from src (vitest, tsx) and dist.
const THREAD_CODE = `
const { parentPort } = require('node:worker_threads');
const { scryptSync, timingSafeEqual } = require('node:crypto');
try {
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  require('node:os').setPriority(tid, ${SCRYPT_NICE});
} catch {}
parentPort.on('message', (m) => {
  let ok = false;
  try {
    const expected = Buffer.from(m.hash, 'base64');
    const got = scryptSync(m.password, Buffer.from(m.salt, 'base64'), expected.length, { N: m.n, r: m.r, p: m.p, maxmem: 64 * 1024 * 1024 });
    ok = got.length === expected.length && timingSafeEqual(got, expected);
  } catch {}
  parentPort.postMessage({ id: m.id, ok });
});
`;

let thread: Worker | null = null;
let nextId = 0;
let checksStarted = 0;

/** For tests: how many scrypt checks this process has sent to the thread (proves work done without timing it). */
export function scryptChecksStarted(): number {
  return checksStarted;
}
const pending = new Map<number, (ok: boolean) => void>();

function failAll(): void {
  for (const resolve of pending.values()) resolve(false);
  pending.clear();
  thread = null;
}

function getThread(): Worker {
  if (thread !== null) return thread;
  const w = new Worker(THREAD_CODE, { eval: true });
  w.on('message', (m: { id: number; ok: boolean }) => {
    const resolve = pending.get(m.id);
    pending.delete(m.id);
    if (pending.size === 0) w.unref();
    resolve?.(m.ok);
  });
  // A thread that dies fails its checks closed (401) and is replaced on next use.
  w.on('error', failAll);
  w.on('exit', failAll);
  w.unref(); // idle: never keeps the process alive (after the listeners: adding one refs it again)
  thread = w;
  return w;
}

/** Constant-time check of `password` against scrypt parameters, on the low-priority thread. */
export function scryptCheck(password: string, params: ScryptParams): Promise<boolean> {
  const id = ++nextId;
  checksStarted++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    const w = getThread();
    if (pending.size === 1) w.ref(); // a check in progress keeps the process alive until it answers
    w.postMessage({ id, password, ...params });
  });
}

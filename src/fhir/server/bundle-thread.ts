/**
 * Large transaction and batch Bundles run on a worker thread (https://nodejs.org/api/worker_threads.html),
 * from their request bytes to their response bytes (bundle-thread-work.ts), so the thread that answers
 * every other caller never parses, validates, writes, syncs or collects the garbage of 20,000 entries
 * (issue 24: "the FHIR server parses and commits a large Bundle without stalling other callers"; in
 * stretches on the main thread, the COMMIT's sync of the whole transaction and the garbage collector's
 * pauses over its objects still held it 50-150 ms at a time).
 *
 * The thread writes through its own connection to the same SQLite file while the server's store is held
 * exclusive (store.exclusive: other writes wait, reads go on and see only committed rows, as with
 * store.bulkTransaction). It starts on the first large Bundle, loading the R4 definitions then, and
 * stops after IDLE_MS without one, giving its memory back. If it cannot start or dies, the Bundle is
 * answered on the main thread as before (in stretches); a Bundle a dead thread had begun is answered
 * 500, its transaction rolled back by SQLite (nothing half-written).
 */
import { Worker } from 'node:worker_threads';
import { HospitalApiError } from '../../errors/index.js';
import type { SqliteFhirStore } from '../store/sqlite-store.js';
import type { BundleDone, BundleJob } from './bundle-thread-work.js';
import type { FhirResponse, WritePolicy } from './context.js';

/** From this size a Bundle POSTed to the base goes to the thread. */
export const THREAD_BODY_BYTES = 256 * 1024;
/** The smallest heap a Bundle thread is given, in MB. */
export const MIN_HEAP_MB = 32;
/** A thread with no Bundle for this long stops. */
export const IDLE_MS = 60_000;

// Plain JavaScript run with `eval`, so it starts the same from src (vitest and tsx need tsx's loader in the
// thread for TypeScript) and from dist (plain .js). No `require`: the thread inherits the process's flags, and
// under `--input-type=module` the code runs as an ES module, where only `import()` works in both.
const THREAD_CODE = `
(async () => {
  const { parentPort, workerData } = await import('node:worker_threads');
  if (workerData.target.endsWith('.ts')) (await import('tsx/esm/api')).register();
  const { openThread, runJob, closeThread } = await import(workerData.target);
  openThread(workerData.file, workerData.options, workerData.validate, (id) => parentPort.postMessage({ id, writing: true }));
  parentPort.on('message', (job) => {
    if (job === 'close') { closeThread(); parentPort.close(); return; }
    runJob(job).then((done) => parentPort.postMessage(done), (err) => parentPort.postMessage({ id: job.id, failed: String(err && err.message) }));
  });
  parentPort.postMessage({ ready: true });
})().catch((err) => { throw err; });
`;

const TARGET = new URL(`./bundle-thread-work${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;

export interface BundleThreadRequest {
  body: Buffer;
  base: string;
  preferReturn?: string;
}

export interface BundleThread {
  /** The Bundle's answer, or undefined when no thread can take it (the caller runs it on its own thread). */
  run(req: BundleThreadRequest): Promise<FhirResponse | undefined>;
  close(): Promise<void>;
}

type ThreadAnswer = BundleDone & { failed?: string };

/** A thread that failed this many times is not started again: Bundles run on the main thread. */
const MAX_FAILURES = 3;
let sentToThread = 0;

const writingListeners = new Set<() => void>();

/** Calls `listener` each time a Bundle thread begins a Bundle's writes (tests; logs). Returns its removal. */
export function onBundleThreadWriting(listener: () => void): () => void {
  writingListeners.add(listener);
  return () => writingListeners.delete(listener);
}

/** For tests: how many Bundles this process has sent to a Bundle thread (proves where the work ran). */
export function bundlesSentToThread(): number {
  return sentToThread;
}

export function bundleThread(store: SqliteFhirStore, policy: WritePolicy, limits: { maxDepth: number; heapMb: number }): BundleThread {
  const { maxDepth } = limits;
  let worker: Worker | undefined;
  let ready: Promise<boolean> | undefined;
  let idle: NodeJS.Timeout | undefined;
  let failures = 0;
  let nextId = 0;
  const pending = new Map<number, (done: ThreadAnswer | undefined) => void>();

  /** Asks the thread to close its connection and end; ends it outright if it has not within a few seconds. */
  const stop = async (): Promise<void> => {
    clearTimeout(idle);
    const w = worker;
    worker = undefined;
    ready = undefined;
    if (!w) return;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    w.ref(); // until it has ended: a server closing must not leave before its thread's connection is closed
    w.postMessage('close');
    const force = setTimeout(() => void w.terminate(), 5_000);
    await exited;
    clearTimeout(force);
  };

  const start = (): Promise<boolean> => {
    const peer = store.peer();
    const w = new Worker(THREAD_CODE, {
      eval: true,
      workerData: { target: TARGET, file: peer.file, options: peer.options, validate: policy.validate },
      // below a few MB V8 cannot even set the thread's heap up, and that failure ends the whole process
      resourceLimits: { maxOldGenerationSizeMb: Math.max(MIN_HEAP_MB, limits.heapMb) },
    });
    worker = w;
    w.unref(); // idle, it never keeps the process alive
    return new Promise<boolean>((resolve) => {
      w.on('message', (m: ThreadAnswer | { ready: true } | { id: number; writing: true }) => {
        if ('ready' in m) return resolve(true);
        if ('writing' in m) {
          for (const listener of writingListeners) listener();
          return;
        }
        const done = pending.get(m.id);
        pending.delete(m.id);
        done?.(m);
      });
      let ended = false;
      const gone = (err?: unknown): void => {
        if (ended) return;
        ended = true;
        const stopped = worker !== w; // stop() let go of it first: not a failure
        if (!stopped) {
          worker = undefined;
          ready = undefined;
          failures++;
          if (err) process.emitWarning(`FHIR Bundle thread failed: ${(err as Error).message ?? String(err)}`);
        }
        resolve(false);
        for (const done of pending.values()) done(undefined);
        pending.clear();
      };
      w.on('error', gone);
      w.on('exit', () => gone());
    });
  };

  return {
    async run(req) {
      if (failures >= MAX_FAILURES) return undefined;
      clearTimeout(idle);
      ready ??= start();
      if (!(await ready) || !worker) return undefined;
      const w = worker;
      return store.exclusive(async () => {
        const id = ++nextId;
        const job: BundleJob = { id, body: req.body, base: req.base, policy, maxDepth, stamp: store.peer().stamp, ...(req.preferReturn ? { preferReturn: req.preferReturn } : {}) };
        sentToThread++;
        w.ref(); // a Bundle in progress keeps the process alive until answered
        const done = await new Promise<ThreadAnswer | undefined>((resolve) => {
          pending.set(id, resolve);
          w.postMessage(job);
        });
        if (pending.size === 0 && worker === w) {
          w.unref();
          idle = setTimeout(() => void stop(), IDLE_MS).unref();
        }
        if (!done || done.failed !== undefined) {
          throw new HospitalApiError('ERR_FHIR_BUNDLE_THREAD', { detail: done?.failed ?? 'the thread ended' });
        }
        store.adoptStamp(done.stamp);
        return { status: done.status, raw: Buffer.from(done.raw.buffer, done.raw.byteOffset, done.raw.byteLength) };
      });
    },
    close: stop,
  };
}

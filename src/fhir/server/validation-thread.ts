/**
 * R4 validation of a transaction Bundle's entries on a worker thread (https://nodejs.org/api/worker_threads.html;
 * issue 28). Validation is most of a small Bundle's CPU; on the main thread it ran one Bundle after another
 * with the writes. On this thread it runs beside them: while one Bundle is validated here, the main thread
 * parses, writes and answers another, so a load with Bundles in flight uses a second core.
 *
 * The result is the same as validating on the main thread: the thread reads the request's own bytes, runs
 * the same `validationIssues` with the same options, and answers with the first invalid entry's findings,
 * from which the transaction builds the same error (validate.ts invalidResource) before anything is written.
 * The thread starts on the first Bundle that uses it (loading the R4 definitions then, about 0.3 s), stops
 * after IDLE_MS without one, giving its memory back; when it cannot start or dies, the caller validates on
 * its own thread as before (`firstInvalid` answers undefined).
 */
import { Worker } from 'node:worker_threads';
import type { ValidationDone, ValidationJob } from './validation-thread-work.js';

/** A thread with no work for this long stops. */
export const IDLE_MS = 60_000;
/** Heap of the thread, in MB: the R4 definitions take about 100 MB, a Bundle below the Bundle thread's size little. */
const HEAP_MB = 512;
/** A thread that failed this many times is not started again: entries are validated on the caller's thread. */
const MAX_FAILURES = 3;

// Plain JavaScript run with `eval`, so it starts the same from src (vitest and tsx need tsx's loader in the
// thread for TypeScript) and from dist (plain .js), as bundle-thread.ts does. No `require`: the thread inherits
// the process's flags, and under `--input-type=module` the code runs as an ES module, where only `import()` works in both.
const THREAD_CODE = `
(async () => {
  const { parentPort, workerData } = await import('node:worker_threads');
  if (workerData.target.endsWith('.ts')) (await import('tsx/esm/api')).register();
  const { openThread, runJob } = await import(workerData.target);
  openThread();
  parentPort.on('message', (job) => {
    if (job === 'close') { parentPort.close(); return; }
    let done;
    try { done = runJob(job); } catch (err) { done = { id: job.id, failed: String(err && err.message) }; }
    parentPort.postMessage(done);
  });
  parentPort.postMessage({ ready: true });
})().catch((err) => { throw err; });
`;

const TARGET = new URL(`./validation-thread-work${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href;

export type EntryFinding = NonNullable<ValidationDone['invalid']>;

export interface ValidationThread {
  /**
   * Validates the resources of `indices` (ascending) among the entries of the transaction Bundle whose request
   * body is `body`: the first invalid one's index and findings, null when all are valid, undefined when no
   * thread can take it (the caller validates them itself).
   */
  firstInvalid(body: Buffer, indices: number[]): Promise<EntryFinding | null | undefined>;
  close(): Promise<void>;
}

type Answer = ValidationDone & { failed?: string };

let validatedOnThread = 0;

/** For tests: how many entries this process has had validated on a validation thread (proves where the work ran). */
export function entriesValidatedOnThread(): number {
  return validatedOnThread;
}

export function validationThread(): ValidationThread {
  let worker: Worker | undefined;
  let ready: Promise<boolean> | undefined;
  let idle: NodeJS.Timeout | undefined;
  let failures = 0;
  let nextId = 0;
  const pending = new Map<number, (done: Answer | undefined) => void>();

  const stop = async (): Promise<void> => {
    clearTimeout(idle);
    const w = worker;
    worker = undefined;
    ready = undefined;
    if (!w) return;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    w.postMessage('close');
    const force = setTimeout(() => void w.terminate(), 5_000);
    await exited;
    clearTimeout(force);
  };

  const start = (): Promise<boolean> => {
    const w = new Worker(THREAD_CODE, { eval: true, workerData: { target: TARGET }, resourceLimits: { maxOldGenerationSizeMb: HEAP_MB } });
    worker = w;
    w.unref(); // idle, it never keeps the process alive
    return new Promise<boolean>((resolve) => {
      w.on('message', (m: Answer | { ready: true }) => {
        if ('ready' in m) return resolve(true);
        const done = pending.get(m.id);
        pending.delete(m.id);
        done?.(m);
      });
      let ended = false;
      const gone = (err?: unknown): void => {
        if (ended) return;
        ended = true;
        if (worker === w) {
          // not stopped by stop(): a failure
          worker = undefined;
          ready = undefined;
          failures++;
          if (err) process.emitWarning(`FHIR validation thread failed: ${(err as Error).message ?? String(err)}`);
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
    async firstInvalid(body, indices) {
      if (failures >= MAX_FAILURES) return undefined;
      clearTimeout(idle);
      ready ??= start();
      if (!(await ready) || !worker) return undefined;
      const w = worker;
      const id = ++nextId;
      // a copy of exactly the body's bytes (a Buffer may view a larger pool), handed over without a second copy
      const bytes = new Uint8Array(body);
      const job: ValidationJob = { id, body: bytes, indices };
      w.ref(); // work in progress keeps the process alive until answered
      const done = await new Promise<Answer | undefined>((resolve) => {
        pending.set(id, resolve);
        w.postMessage(job, [bytes.buffer]);
      });
      if (pending.size === 0 && worker === w) {
        w.unref();
        idle = setTimeout(() => void stop(), IDLE_MS).unref();
      }
      if (!done || done.failed !== undefined) return undefined;
      validatedOnThread += indices.length;
      return done.invalid;
    },
    close: stop,
  };
}

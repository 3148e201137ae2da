/**
 * One worker thread (https://nodejs.org/api/worker_threads.html) that runs jobs for the FHIR server: the
 * Bundle thread (bundle-thread.ts, issue 24) and the validation thread (validation-thread.ts, issue 28)
 * differ in their work, not in how the thread lives, so that lives here once:
 *  - it starts on the first job (`ready`), and stops after `idleMs` without one, giving its memory back;
 *  - its heap is limited (`heapMb`), and a thread that ends mid-job answers that job (and every job it
 *    held) `undefined`;
 *  - after `maxFailures` failures it is not started again (`ready` answers false: callers do the work on
 *    their own thread);
 *  - idle, it never keeps the process alive; with a job in progress, or while stopping, it does.
 *
 * The work module (`target`) exports `openThread(data, emit)`, `runJob(job)` (a value or a promise of
 * one) and, optionally, `closeThread()`. A job's answer carries the job's `id`; `{ id, failed }` when
 * `runJob` threw. `emit` sends the owner other messages on the way (`onMessage`).
 */
import { Worker, type Transferable } from 'node:worker_threads';

// Plain JavaScript run with `eval`, so it starts the same from src (vitest and tsx need tsx's loader in the
// thread for TypeScript) and from dist (plain .js). No `require`: the thread inherits the process's flags, and
// under `--input-type=module` the code runs as an ES module, where only `import()` works in both.
const THREAD_CODE = `
(async () => {
  const { parentPort, workerData } = await import('node:worker_threads');
  if (workerData.target.endsWith('.ts')) (await import('tsx/esm/api')).register();
  const work = await import(workerData.target);
  work.openThread(workerData.data, (message) => parentPort.postMessage(message));
  parentPort.on('message', (job) => {
    if (job === 'close') { if (work.closeThread) work.closeThread(); parentPort.close(); return; }
    new Promise((resolve) => resolve(work.runJob(job))).then(
      (done) => parentPort.postMessage(done),
      (err) => parentPort.postMessage({ id: job.id, failed: String(err && err.message) }),
    );
  });
  parentPort.postMessage({ ready: true });
})().catch((err) => { throw err; });
`;

/** The URL of a work module beside the calling module (`.ts` from src, `.js` from dist). */
export function workModule(name: string, from: string): string {
  return new URL(`./${name}${from.endsWith('.ts') ? '.ts' : '.js'}`, from).href;
}

export interface JobThreadOptions {
  /** The work module's URL (workModule). */
  target: string;
  /** What `openThread` is given, read at each start. */
  data: () => unknown;
  heapMb: number;
  idleMs: number;
  maxFailures: number;
  /** Names the thread in the process warning a failure gives. */
  name: string;
  /** A message that is neither `ready` nor an answer; true when it was one of the owner's own. */
  onMessage?: (message: unknown) => boolean;
}

/** A job's answer: the work module's, or `failed` with runJob's error message. */
export type JobAnswer<A> = (A & { failed?: undefined }) | { id: number; failed: string };

export interface JobThread<J, A> {
  /** Starts the thread if need be; false when none can run (callers do the work themselves). */
  ready(): Promise<boolean>;
  /** Runs `job` (given an id here) on the thread; undefined when the thread is gone or ended before answering. */
  send(job: J, transfer?: readonly Transferable[]): Promise<JobAnswer<A> | undefined>;
  close(): Promise<void>;
}

export function jobThread<J extends object, A extends { id: number }>(options: JobThreadOptions): JobThread<J, A> {
  let worker: Worker | undefined;
  let started: Promise<boolean> | undefined;
  let idle: NodeJS.Timeout | undefined;
  let failures = 0;
  let nextId = 0;
  const pending = new Map<number, (done: JobAnswer<A> | undefined) => void>();

  /** Asks the thread to end; ends it outright if it has not within a few seconds. */
  const stop = async (): Promise<void> => {
    clearTimeout(idle);
    const w = worker;
    worker = undefined;
    started = undefined;
    if (!w) return;
    const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
    w.ref(); // until it has ended: a server closing must not leave before its thread has let go of its files
    w.postMessage('close');
    const force = setTimeout(() => void w.terminate(), 5_000);
    await exited;
    clearTimeout(force);
  };

  const start = (): Promise<boolean> => {
    const w = new Worker(THREAD_CODE, {
      eval: true,
      workerData: { target: options.target, data: options.data() },
      resourceLimits: { maxOldGenerationSizeMb: options.heapMb },
    });
    worker = w;
    w.unref(); // idle, it never keeps the process alive
    return new Promise<boolean>((resolve) => {
      w.on('message', (m: JobAnswer<A> | { ready: true }) => {
        if ('ready' in m) return resolve(true);
        if (options.onMessage?.(m)) return;
        const done = pending.get(m.id);
        pending.delete(m.id);
        done?.(m);
      });
      let ended = false;
      const gone = (err?: unknown): void => {
        if (ended) return;
        ended = true;
        if (worker === w) {
          // not let go of by stop() first: a failure
          worker = undefined;
          started = undefined;
          failures++;
          if (err) process.emitWarning(`${options.name} failed: ${(err as Error).message ?? String(err)}`);
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
    async ready() {
      if (failures >= options.maxFailures) return false;
      clearTimeout(idle);
      started ??= start();
      return (await started) && worker !== undefined;
    },
    async send(job, transfer) {
      const w = worker;
      if (!w) return undefined;
      clearTimeout(idle);
      const id = ++nextId;
      w.ref(); // a job in progress keeps the process alive until answered
      const done = await new Promise<JobAnswer<A> | undefined>((resolve) => {
        pending.set(id, resolve);
        w.postMessage({ ...job, id }, transfer);
      });
      if (pending.size === 0 && worker === w) {
        w.unref();
        idle = setTimeout(() => void stop(), options.idleMs).unref();
      }
      return done;
    },
    close: stop,
  };
}

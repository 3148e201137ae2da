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
import { HospitalApiError } from '../../errors/index.js';
import type { SqliteFhirStore } from '../store/sqlite-store.js';
import type { BundleDone, BundleJob, ThreadData } from './bundle-thread-work.js';
import type { FhirResponse, WritePolicy } from './context.js';
import { jobThread, workModule } from './job-thread.js';

/** From this size a Bundle POSTed to the base goes to the thread. */
export const THREAD_BODY_BYTES = 256 * 1024;
/** The smallest heap a Bundle thread is given, in MB. */
export const MIN_HEAP_MB = 32;
/** A thread with no Bundle for this long stops. */
export const IDLE_MS = 60_000;
/** A thread that failed this many times is not started again: Bundles run on the main thread. */
const MAX_FAILURES = 3;

export interface BundleThreadRequest {
  body: Buffer;
  base: string;
  preferReturn?: string;
  /** A large single create or update (issue 45) rather than a Bundle posted to the base: its request, `body` its body. */
  request?: BundleJob['request'];
  /** A transaction's time limit (FhirContext.deadline). */
  deadline?: BundleJob['deadline'];
}

export interface BundleThread {
  /** The Bundle's answer, or undefined when no thread can take it (the caller runs it on its own thread). */
  run(req: BundleThreadRequest): Promise<FhirResponse | undefined>;
  close(): Promise<void>;
}

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
  const thread = jobThread<Omit<BundleJob, 'id'>, BundleDone>({
    target: workModule('bundle-thread-work', import.meta.url),
    data: (): ThreadData => {
      const peer = store.peer();
      return { file: peer.file, options: peer.options, validate: policy.validate };
    },
    // below a few MB V8 cannot even set the thread's heap up, and that failure ends the whole process
    heapMb: Math.max(MIN_HEAP_MB, limits.heapMb),
    idleMs: IDLE_MS,
    maxFailures: MAX_FAILURES,
    name: 'FHIR Bundle thread',
    onMessage: (m) => {
      if (!(m as { writing?: boolean }).writing) return false;
      for (const listener of writingListeners) listener();
      return true;
    },
  });

  return {
    async run(req) {
      if (!(await thread.ready())) return undefined;
      return store.exclusive(async () => {
        sentToThread++;
        const done = await thread.send({
          body: req.body, base: req.base, policy, maxDepth, stamp: store.peer().stamp,
          ...(req.preferReturn ? { preferReturn: req.preferReturn } : {}), ...(req.request ? { request: req.request } : {}),
          ...(req.deadline ? { deadline: req.deadline } : {}),
        });
        if (!done || done.failed !== undefined) {
          throw new HospitalApiError('ERR_FHIR_BUNDLE_THREAD', { detail: done?.failed ?? 'the thread ended' });
        }
        store.adoptStamp(done.stamp);
        return {
          status: done.status,
          raw: Buffer.from(done.raw.buffer, done.raw.byteOffset, done.raw.byteLength),
          ...(done.location ? { location: done.location } : {}), ...(done.etag ? { etag: done.etag } : {}), ...(done.lastModified ? { lastModified: done.lastModified } : {}),
        };
      });
    },
    close: () => thread.close(),
  };
}

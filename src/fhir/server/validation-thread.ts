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
import { jobThread, workModule } from './job-thread.js';
import { turns } from './time-slice.js';
import type { ValidationDone, ValidationJob } from './validation-thread-work.js';

/** A thread with no work for this long stops. */
export const IDLE_MS = 60_000;
/** Heap of the thread, in MB: the R4 definitions take about 100 MB, a Bundle below the Bundle thread's size little. */
const HEAP_MB = 512;
/** A thread that failed this many times is not started again: entries are validated on the caller's thread. */
const MAX_FAILURES = 3;

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

let validatedOnThread = 0;

/** For tests: how many entries this process has had validated on a validation thread (proves where the work ran). */
export function entriesValidatedOnThread(): number {
  return validatedOnThread;
}

export function validationThread(): ValidationThread {
  const thread = jobThread<Omit<ValidationJob, 'id'>, ValidationDone>({
    target: workModule('validation-thread-work', import.meta.url),
    data: () => null,
    heapMb: HEAP_MB,
    idleMs: IDLE_MS,
    maxFailures: MAX_FAILURES,
    name: 'FHIR validation thread',
  });
  // each answer releases a Bundle's write: one per turn of the event loop, so requests that arrived meanwhile are
  // read, and their entries sent here, between two writes (time-slice.ts turns)
  const turn = turns();
  return {
    async firstInvalid(body, indices) {
      if (!(await thread.ready())) return undefined;
      // a copy of exactly the body's bytes (a Buffer may view a larger pool), handed over without a second copy
      const bytes = new Uint8Array(body);
      const done = await thread.send({ body: bytes, indices }, [bytes.buffer]);
      await turn();
      if (!done || done.failed !== undefined) return undefined;
      validatedOnThread += indices.length;
      return done.invalid;
    },
    close: () => thread.close(),
  };
}

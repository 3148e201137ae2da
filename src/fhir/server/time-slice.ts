/**
 * Cooperative time slicing for long requests (issue 24): a large Bundle is worked through in stretches
 * of at most `budgetMs` of synchronous work, and between two stretches the event loop gets a turn
 * (setImmediate runs after pending I/O callbacks: https://nodejs.org/api/timers.html#setimmediatecallback-args),
 * so other callers (GET /metadata, a read, the health probe) are answered while it runs.
 */
import { HospitalApiError } from '../../errors/index.js';

export const SLICE_MS = 20;

export type Tick = () => Promise<void> | undefined;

/**
 * A tick to call between units of work: undefined (nothing to await) while the current stretch is
 * within its budget, else a promise that resolves on the event loop's next turn, starting a new stretch.
 *
 * A stretch is synchronous work: when the caller has awaited something else that let the event loop turn
 * (the validation thread's answer, a write gate), the next tick starts a new stretch instead of counting the
 * wait against the budget. Otherwise a Bundle that waited 10 ms for its validation would yield right after
 * its write, and its answer would go out behind another Bundle's write (issue 28). The turn is seen by an
 * immediate set once per stretch, which runs at the first turn of the loop, whoever caused it.
 */
export function timeSlicer(budgetMs = SLICE_MS): Tick {
  let start = performance.now();
  let turned = false;
  const watch = (): void => {
    turned = false;
    setImmediate(() => {
      turned = true;
    });
  };
  const restart = (): void => {
    start = performance.now();
    watch();
  };
  watch();
  return () => {
    if (turned) {
      restart();
      return undefined;
    }
    if (performance.now() - start < budgetMs) return undefined;
    return new Promise<void>((resolve) => {
      setImmediate(() => {
        restart();
        resolve();
      });
    });
  };
}

/**
 * `tick`, which throws ERR_FHIR_TRANSACTION_TIMEOUT once the wall clock reaches `deadline.at` (issue 45): a
 * transaction still checking or writing then is rolled back and answered 503, before a gateway's read time-out
 * (Kong's default 60 s) would answer 504 for a transaction that goes on and commits. Date.now, not
 * performance.now: the Bundle thread's clock starts elsewhere.
 */
export function withDeadline(tick: Tick, deadline: { at: number; ms: number } | undefined): Tick {
  if (!deadline) return tick;
  return () => {
    if (Date.now() >= deadline.at) throw new HospitalApiError('ERR_FHIR_TRANSACTION_TIMEOUT', { ms: deadline.ms });
    return tick();
  };
}

/** Runs a generator of work to its end in one synchronous stretch; its yields mark where it could pause. */
export function drain<T>(work: Generator<void, T>): T {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
  }
}

/** Runs a generator of work to its end, giving the event loop a turn at a yield once the stretch is over budget. */
export async function sliced<T>(work: Generator<void, T>, tick: Tick = timeSlicer()): Promise<T> {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
    const turn = tick();
    if (turn) await turn;
  }
}

/**
 * Turns of the event loop handed out one at a time (issue 28): `take()` resolves at most one caller per
 * iteration of the loop, in the order they asked, and between two of them the loop goes once round its
 * phases, reading whatever requests have arrived meanwhile. The validation thread answers Bundles in a
 * batch (one message callback delivers them all); each answer releases a synchronous write, and without
 * turns those writes ran back to back while the next requests waited unread in their sockets, so the
 * thread sat idle once they were done. An immediate queued from within an immediate runs on the next
 * iteration, after the poll phase (https://nodejs.org/en/learn/asynchronous-work/event-loop-timers-and-nexttick).
 */
export function turns(): () => Promise<void> {
  // a grant is pending exactly while someone waits: the first to wait sets it, each grant sets the next
  const waiting: Array<() => void> = [];
  const grant = (): void => {
    waiting.shift()?.();
    if (waiting.length > 0) setImmediate(grant);
  };
  return () =>
    new Promise<void>((resolve) => {
      if (waiting.push(resolve) === 1) setImmediate(grant);
    });
}

/**
 * Cooperative time slicing for long requests (issue 24): a large Bundle is worked through in stretches
 * of at most `budgetMs` of synchronous work, and between two stretches the event loop gets a turn
 * (setImmediate runs after pending I/O callbacks: https://nodejs.org/api/timers.html#setimmediatecallback-args),
 * so other callers (GET /metadata, a read, the health probe) are answered while it runs.
 */
export const SLICE_MS = 20;

export type Tick = () => Promise<void> | undefined;

/**
 * A tick to call between units of work: undefined (nothing to await) while the current stretch is
 * within its budget, else a promise that resolves on the event loop's next turn, starting a new stretch.
 */
export function timeSlicer(budgetMs = SLICE_MS): Tick {
  let start = performance.now();
  return () => {
    if (performance.now() - start < budgetMs) return undefined;
    return new Promise<void>((resolve) => {
      setImmediate(() => {
        start = performance.now();
        resolve();
      });
    });
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

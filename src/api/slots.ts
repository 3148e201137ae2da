/**
 * MAX_CONCURRENT_REQUESTS: the POST /api/patients in progress, each holding
 * one slot from its start until its connection closes. Past the cap a request
 * gets none and is answered 503 at once, never queued (queued requests would
 * hold pages in memory).
 */
export class Slots {
  #free: number;

  constructor(limit: number) {
    this.#free = limit;
  }

  /** Takes a slot: returns the function that gives it back (once, however often called), or null when none is free. */
  take(): (() => void) | null {
    if (this.#free === 0) return null;
    this.#free -= 1;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#free += 1;
    };
  }
}

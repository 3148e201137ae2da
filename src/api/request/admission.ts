/**
 * Admission of POST /api/patients (issue 24): MAX_CONCURRENT_REQUESTS slots,
 * each held by one request from its admission until its connection closes,
 * and past them a FIFO queue of at most API_QUEUE_LENGTH waiters, each waiting
 * at most API_QUEUE_TIMEOUT_MS. A request asks only once its body has arrived
 * and the platform has granted access (src/api/routes/patients.ts), so slow
 * uploads and bad tokens never hold a slot or a place. A waiter holds only its
 * small parsed body; the pages of a record are fetched only with a slot.
 */

/** Why a request was not admitted: the queue was full, it waited too long, or its caller left. */
export type Refusal = 'queue-full' | 'timeout' | 'left';

export class AdmissionRefused extends Error {
  constructor(readonly reason: Refusal) {
    super(`not admitted: ${reason}`);
  }
}

export interface AdmissionOptions {
  slots: number;
  queueLength: number;
  queueTimeoutMs: number;
  /** Told the number of waiters whenever it changes (a gauge). */
  onDepth?: (depth: number) => void;
  /** Told each admission's or refusal's time in the queue, in seconds (a histogram). */
  onWait?: (seconds: number, outcome: 'admitted' | Refusal) => void;
}

interface Waiter {
  grant: (release: () => void) => void;
}

export class Admission {
  readonly #options: AdmissionOptions;
  #free: number;
  readonly #queue: Waiter[] = [];

  constructor(options: AdmissionOptions) {
    this.#options = options;
    this.#free = options.slots;
  }

  /** Requests waiting for a slot. */
  get depth(): number {
    return this.#queue.length;
  }

  /**
   * Resolves with the function that gives the slot back (once, however often
   * called): at once when one is free, else when the waiters ahead have gone.
   * Rejects with AdmissionRefused when the queue is full, the wait passes
   * API_QUEUE_TIMEOUT_MS, or `left` aborts (the waiter then leaves the queue).
   */
  admit(left: AbortSignal): Promise<() => void> {
    if (left.aborted) return Promise.reject(new AdmissionRefused('left'));
    if (this.#free > 0 && this.#queue.length === 0) {
      this.#free -= 1;
      this.#options.onWait?.(0, 'admitted');
      return Promise.resolve(this.#releaser());
    }
    if (this.#queue.length >= this.#options.queueLength) {
      this.#options.onWait?.(0, 'queue-full');
      return Promise.reject(new AdmissionRefused('queue-full'));
    }
    const start = process.hrtime.bigint();
    const waited = () => Number(process.hrtime.bigint() - start) / 1e9;
    return new Promise((resolve, reject) => {
      const leave = (reason: Refusal) => {
        const i = this.#queue.indexOf(waiter);
        if (i === -1) return;
        this.#queue.splice(i, 1);
        this.#depthChanged();
        cleanup();
        this.#options.onWait?.(waited(), reason);
        reject(new AdmissionRefused(reason));
      };
      const onLeft = () => leave('left');
      const timer = setTimeout(() => leave('timeout'), this.#options.queueTimeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        left.removeEventListener('abort', onLeft);
      };
      const waiter: Waiter = {
        grant: (release) => {
          cleanup();
          this.#options.onWait?.(waited(), 'admitted');
          resolve(release);
        },
      };
      left.addEventListener('abort', onLeft, { once: true });
      this.#queue.push(waiter);
      this.#depthChanged();
    });
  }

  /** A slot given back goes to the first waiter, or becomes free. */
  #releaser(): () => void {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const next = this.#queue.shift();
      if (next) {
        this.#depthChanged();
        next.grant(this.#releaser());
      } else {
        this.#free += 1;
      }
    };
  }

  #depthChanged(): void {
    this.#options.onDepth?.(this.#queue.length);
  }
}

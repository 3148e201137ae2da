/**
 * The byte buffers one record's $everything pages are read into, reused from
 * page to page (issue 28). A fresh buffer per page is memory outside the
 * JavaScript heap that only a garbage collection gives back, and V8 collects
 * for outside memory in steps of tens of MB: serve held up to ~40 MB of dead
 * pages during a 100,000-resource record. With reuse, a record holds as many
 * buffers as it has pages in flight (the one being written, the next one being
 * read), each as large as the largest page so far (at most FHIR_MAX_PAGE_BYTES).
 *
 * A buffer goes back to the pool only when its bytes have been handed to the
 * caller's socket in full (the write's callback), never merely queued: it is
 * then overwritten by a later page of the same record. Pools are never shared
 * between records.
 */
import type { Dispatcher } from 'undici';
import { BodyTooLargeError } from './upstream-http.js';

/** A page read into a pooled buffer: `bytes` is valid until `release()`. */
export interface PooledPage {
  bytes: Buffer;
  /** Gives the buffer back for a later page (idempotent). */
  release(): void;
}

const FIRST_SIZE = 64 * 1024;

export class PageBuffers {
  readonly #free: Buffer[] = [];

  /** Reads a response body into a free buffer, failing past `max` bytes (before the rest is read). */
  async read(body: Dispatcher.ResponseData['body'], max: number): Promise<PooledPage> {
    let buf = this.#free.pop() ?? Buffer.allocUnsafe(Math.min(FIRST_SIZE, max));
    let size = 0;
    try {
      for await (const chunk of body) {
        const c = chunk as Buffer;
        if (size + c.length > max) {
          body.destroy();
          throw new BodyTooLargeError(max);
        }
        if (size + c.length > buf.length) {
          const bigger = Buffer.allocUnsafe(Math.min(max, Math.max(2 * buf.length, size + c.length)));
          buf.copy(bigger, 0, 0, size);
          buf = bigger;
        }
        c.copy(buf, size);
        size += c.length;
      }
    } catch (err) {
      this.#free.push(buf);
      throw err;
    }
    let released = false;
    const whole = buf;
    return {
      bytes: whole.subarray(0, size),
      release: () => {
        if (released) return;
        released = true;
        this.#free.push(whole);
      },
    };
  }
}

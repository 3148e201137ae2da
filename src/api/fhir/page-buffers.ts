/**
 * The byte buffers one record's $everything pages are read into, reused from
 * page to page (issue 28). A fresh buffer per page is memory outside the
 * JavaScript heap that only a garbage collection gives back, and V8 collects
 * for outside memory in steps of tens of MB: serve held up to ~40 MB of dead
 * pages during a 100,000-resource record. With reuse, a record holds as many
 * buffers as it has pages in flight (the one being written, the next one being
 * read), each the size of the first page it held (at most FHIR_MAX_PAGE_BYTES).
 *
 * A buffer goes back to the pool only when its bytes have been handed to the
 * caller's socket in full (the write's callback), never merely queued: it is
 * then overwritten by a later page of the same record. A record that completes
 * (every page's bytes in the socket) hands its buffers on to the process's
 * PagePool, for the next record; a record that fails keeps them (the garbage
 * collector takes them), since its last page may still be queued in a socket.
 */
import type { Dispatcher } from 'undici';
import { readChunks } from './upstream-http.js';

/** A page read into a pooled buffer: `bytes` is valid until `release()`. */
export interface PooledPage {
  bytes: Buffer;
  /** Gives the buffer back for a later page (idempotent). */
  release(): void;
}

/**
 * The buffers completed records left for the next ones: a few, each at most
 * MAX_POOLED_BYTES, so an idle process holds at most POOL_BYTES of them.
 */
export class PagePool {
  static readonly MAX_POOLED_BYTES = 2 * 1024 * 1024;
  static readonly POOL_BYTES = 8 * 1024 * 1024;
  readonly #free: Buffer[] = [];
  #bytes = 0;

  /** A free buffer of at least `size` bytes, or null. */
  take(size: number): Buffer | null {
    const i = this.#free.findIndex((b) => b.length >= size);
    if (i < 0) return null;
    const buf = this.#free.splice(i, 1)[0] as Buffer;
    this.#bytes -= buf.length;
    return buf;
  }

  /** Keeps `buf` for a later record when it fits. */
  give(buf: Buffer): void {
    if (buf.length > PagePool.MAX_POOLED_BYTES || this.#bytes + buf.length > PagePool.POOL_BYTES) return;
    this.#free.push(buf);
    this.#bytes += buf.length;
  }
}

export class PageBuffers {
  readonly #free: Buffer[] = [];

  /** `shared`: where buffers come from when the record has none free, and go when it completes. */
  constructor(private readonly shared: PagePool | null = null) {}

  /** The record completed: every page's bytes are in the socket, its buffers go to the shared pool. */
  finish(): void {
    for (const buf of this.#free.splice(0)) this.shared?.give(buf);
  }

  /**
   * Reads a response body, failing past `max` bytes (before the rest is read), into
   * a free buffer large enough for it, else into a new one of its exact size
   * (which then serves the record's later pages: they are about as large).
   */
  async read(body: Dispatcher.ResponseData['body'], max: number): Promise<PooledPage> {
    const { chunks, size } = await readChunks(body, max);
    const i = this.#free.findIndex((b) => b.length >= size);
    // Never a received chunk itself: its memory may be shared, and this buffer is overwritten later.
    const whole = i >= 0 ? (this.#free.splice(i, 1)[0] as Buffer) : (this.shared?.take(size) ?? Buffer.allocUnsafeSlow(size));
    let at = 0;
    for (const c of chunks) at += c.copy(whole, at);
    let released = false;
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

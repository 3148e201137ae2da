/**
 * Writes a record to the raw response as {"resources":[…]}, page by page:
 * the headers and the opening with the first page, a comma between non-empty
 * pages, nothing for a page of repeats only. Each write waits until its bytes
 * are in the socket, so the page loop fetches no further page until the
 * response has drained; a caller that takes nothing for SEND_TIMEOUT_MS is cut
 * (ERR_API_CLIENT_STALLED), so one that never reads holds at most the pages
 * already fetched, and only for that long.
 */
import type { FastifyReply } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';

/** The record's last bytes, sent once its end line is on disk. */
export const RECORD_CLOSE = ']}';

export class RecordWriter {
  #open = false;
  #entries = 0;

  /** `sent` is told the size of every chunk handed to the response. */
  constructor(
    private readonly reply: FastifyReply,
    private readonly sendTimeoutMs: number,
    private readonly sent: (bytes: number) => void,
  ) {}

  /** The headers are out: from now on a failure can only cut the connection. */
  get open(): boolean {
    return this.#open;
  }

  /** One page's new entries (comma-separated JSON) and their count. */
  async page(entries: Buffer, count: number): Promise<void> {
    // The opening or the comma goes out with the entries, in one write to the socket (one turn of the loop, one syscall).
    const chunks: Array<string | Buffer> = [];
    if (!this.#open) {
      this.#open = true;
      // Fastify still logs its "request completed" line for a hijacked reply: none of our own.
      this.reply.hijack();
      this.reply.raw.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': this.reply.request.id });
      chunks.push('{"resources":[');
    }
    if (count > 0) {
      if (this.#entries > 0) chunks.push(',');
      this.#entries += count;
      chunks.push(entries);
    }
    if (chunks.length > 0) await this.#write(chunks);
  }

  /** Completes the record (its bytes were counted with its end line). */
  close(): Promise<void> {
    return new Promise<void>((resolve) => this.reply.raw.end(RECORD_CLOSE, () => resolve()));
  }

  /**
   * Resolves once the chunks have been handed to the socket in full (the last
   * write's callback: they complete in order), not merely queued: a page's
   * bytes are then free for reuse (page-buffers.ts), and no further page is
   * fetched while they wait.
   */
  #write(chunks: Array<string | Buffer>): Promise<void> {
    const raw = this.reply.raw;
    if (raw.destroyed) return Promise.reject(new Error('caller closed the connection'));
    for (const chunk of chunks) this.sent(Buffer.byteLength(chunk));
    const last = chunks.length - 1;
    const ms = this.sendTimeoutMs;
    return new Promise((resolve, reject) => {
      const done = (err?: Error | null) => {
        clearTimeout(timer);
        raw.off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      const onClose = () => done(new Error('caller closed the connection'));
      // Armed for every chunk: a small one the socket cannot take yet waits in the response's buffer.
      const timer = setTimeout(() => done(new HospitalApiError('ERR_API_CLIENT_STALLED', { ms })), ms);
      raw.on('close', onClose);
      // A failed write (ECONNRESET, EPIPE, a destroyed stream) is the caller gone, as the close is.
      chunks.forEach((chunk, i) => (i < last ? raw.write(chunk) : raw.write(chunk, (err) => (err ? onClose() : done()))));
    });
  }
}

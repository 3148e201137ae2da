/**
 * RecordWriter (src/api/answer/record-writer.ts): a page's write resolves only once
 * its bytes are in the socket, not while they still wait in the response's
 * buffer: the page's buffer is reused as soon as it resolves (page-buffers.ts).
 * A caller that reads nothing fills the sockets; the writes then wait, and the
 * caller is cut after SEND_TIMEOUT_MS.
 */
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { RecordWriter } from '../../src/api/answer/record-writer.js';

const app = Fastify();
afterEach(() => app.close());

describe('RecordWriter', () => {
  it('resolves a page only when its bytes have left the response, and stops a caller that reads nothing', { timeout: 30_000 }, async () => {
    // Pages of 10 KB: under the response's 16 KiB high-water mark, so write() returns true even for a
    // page the full socket took only part of.
    const page = Buffer.alloc(10_000, 'a');
    const pending: number[] = [];
    let outcome: unknown = null;
    const finished = new Promise<void>((resolve) => {
      app.post('/r', async (_req, reply) => {
        const writer = new RecordWriter(reply, 500, () => undefined);
        try {
          for (let i = 0; i < 100_000; i++) {
            await writer.page(page, 1);
            pending.push(reply.raw.writableLength);
          }
        } catch (err) {
          outcome = err;
        }
        reply.raw.destroy();
        resolve();
        return reply;
      });
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const socket = connect((app.server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write('POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    socket.pause(); // reads nothing
    await finished;
    socket.destroy();
    expect((outcome as { code?: string }).code).toBe('ERR_API_CLIENT_STALLED');
    expect(pending.length).toBeGreaterThan(10); // the sockets took pages before they filled
    // every page had left the response's own buffer when its write resolved
    expect(pending.filter((n) => n > 0)).toEqual([]);
  });
});

/**
 * Reading a request body whole in the gateway (issue 45), for plugins that
 * need it and for request buffering: Kong's default `proxy_request_buffering
 * on` (kong/templates/nginx_kong.lua; the route's `request_buffering` field,
 * kong/db/schema/entities/routes.lua) makes nginx read the whole body before
 * it opens the upstream request, so a client uploading slowly holds only its
 * own connection, never one to the service.
 *
 * Two bounds, both in `BodyLimits` (ProxyLimits, listeners.ts):
 * - `bodyTimeoutMs`: nginx's client_body_timeout (60 s), the time allowed
 *   between two successive reads of the body; past it the client gets 408
 *   "Request timeout" (Kong's error_handlers.lua body) and its connection closes.
 *   The listener's request time-out still bounds the whole request.
 * - `maxBufferedBodyBytes`: the bytes of all bodies held in memory at once, over
 *   the whole proxy (nginx spills large bodies to temporary files; this
 *   gateway keeps them in memory, so it bounds them instead). A body that would
 *   pass it gets 503 with Retry-After: 1. The bytes count until the response closes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface BodyLimits {
  bodyTimeoutMs: number;
  maxBufferedBodyBytes: number;
}

export const DEFAULT_BODY_LIMITS: BodyLimits = {
  bodyTimeoutMs: 60_000,
  maxBufferedBodyBytes: 256 * 1024 * 1024,
};

/** The bytes of request bodies held by the proxy right now, against `maxBufferedBodyBytes`. */
export class BodyBudget {
  private used = 0;
  constructor(readonly limits: BodyLimits) {}

  take(n: number): boolean {
    if (this.used + n > this.limits.maxBufferedBodyBytes) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used -= n;
  }

  inUse(): number {
    return this.used;
  }
}

/**
 * Why a body could not be read: `status` is what the client is answered (408
 * body time-out, 503 memory budget), or 0 when the client went away (nothing to answer).
 */
export class BodyReadError extends Error {
  constructor(
    readonly status: 0 | 408 | 503,
    message: string,
  ) {
    super(message);
  }
}

export const BODY_TIMEOUT_MESSAGE = 'Request timeout';
export const BODY_BUDGET_MESSAGE = 'Too many request bodies in progress';

/**
 * Reads `req` whole: the Buffer, or null once more than `limit` bytes came (the
 * stream is then paused and left unread). Rejects with BodyReadError on a
 * stalled read, the memory budget, or the client leaving. Bytes taken from
 * `budget` are given back when `res` closes.
 */
export function readWholeBody(req: IncomingMessage, res: ServerResponse, limit: number, budget: BodyBudget): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    if (responseClosed(res)) {
      // A stream reset before the proxy got to it: its 'close' has passed, nothing would give the bytes back.
      reject(new BodyReadError(0, 'client closed'));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let held = 0;
    let settled = false;
    const release = (): void => {
      budget.give(held);
      held = 0;
    };
    res.once('close', release);
    const stop = (): void => {
      settled = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('aborted', onGone);
      req.off('close', onGone);
      req.off('error', onGone);
    };
    const fail = (err: BodyReadError): void => {
      stop();
      chunks.length = 0;
      release();
      req.pause();
      reject(err);
    };
    const onTimeout = (): void => fail(new BodyReadError(408, 'request body timed out'));
    const timer = setTimeout(onTimeout, budget.limits.bodyTimeoutMs);
    function onData(chunk: Buffer): void {
      timer.refresh();
      size += chunk.length;
      if (size > limit) {
        stop();
        chunks.length = 0;
        release();
        req.pause();
        resolve(null);
        return;
      }
      if (!budget.take(chunk.length)) {
        fail(new BodyReadError(503, 'request body memory budget exceeded'));
        return;
      }
      held += chunk.length;
      chunks.push(chunk);
    }
    function onEnd(): void {
      stop();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    }
    function onGone(): void {
      if (!settled && !req.complete) fail(new BodyReadError(0, 'client closed'));
    }
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('aborted', onGone);
    req.once('close', onGone);
    req.once('error', onGone);
  });
}

/** The response's connection or HTTP/2 stream is gone (its 'close' has been emitted or is due). */
export function responseClosed(res: ServerResponse): boolean {
  const stream = (res as { stream?: { destroyed: boolean } }).stream;
  return stream !== undefined ? stream.destroyed : res.destroyed;
}

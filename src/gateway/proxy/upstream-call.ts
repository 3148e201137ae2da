/**
 * One proxied exchange over an undici Pool, through its low-level dispatch
 * handler: response headers are copied from the raw list, the body is
 * streamed with backpressure both ways, connection failures are retried up
 * to `retries` when the request body can be replayed, and errors become
 * Kong's 502/503/504 (kong.md §4).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { CompiledService } from './compile.js';
import { SERVER } from './kong-response.js';

const VIA = `1.1 ${SERVER}`;
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);
const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH']);
const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

export const UPSTREAM_ERRORS = {
  502: 'An invalid response was received from the upstream server',
  503: 'The upstream server is currently unavailable',
  504: 'The upstream server is timing out',
} as const;

export interface UpstreamFailure {
  status: 502 | 503 | 504;
  message: string;
}

export function classify(err: unknown): UpstreamFailure {
  const code = (err as { code?: string }).code ?? '';
  if (TIMEOUTS.has(code)) return { status: 504, message: UPSTREAM_ERRORS[504] };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { status: 503, message: 'name resolution failed' };
  return { status: 502, message: UPSTREAM_ERRORS[502] };
}

export interface CallOptions {
  service: CompiledService;
  method: string;
  path: string;
  headers: string[];
  /** A replayable body (plugin-buffered), the client stream, or null. */
  body: Buffer | IncomingMessage | null;
  /** Extra downstream headers (plugins, request id); flat pairs. */
  responseHeaders: string[];
  startedAt: number;
  onFailure(failure: UpstreamFailure): void;
}

export class UpstreamCall implements Dispatcher.DispatchHandler {
  private abortFn: ((err?: Error) => void) | null = null;
  private resumeFn: (() => void) | null = null;
  private sentAt = 0;
  private attempts = 0;
  private done = false;
  /** Bytes of body still expected (content-length), or -1 when unknown. */
  private remaining = -1;
  private readonly onDrain = (): void => this.resumeFn?.();
  private readonly onClientClose = (): void => {
    if (!this.done) this.abortFn?.(new Error('client closed'));
  };

  constructor(private readonly res: ServerResponse, private readonly o: CallOptions) {
    res.once('close', this.onClientClose);
  }

  start(): void {
    this.sentAt = performance.now();
    const s = this.o.service;
    s.pool.dispatch(
      { method: this.o.method, path: this.o.path, headers: this.o.headers, body: this.o.body, headersTimeout: s.readTimeout, bodyTimeout: s.readTimeout },
      this,
    );
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortFn = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    this.resumeFn = resume;
    const now = performance.now();
    const out: string[] = [];
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = (rawHeaders[i] as Buffer).toString('latin1');
      if (name.length <= 17) {
        const lower = name.toLowerCase();
        if (HOP.has(lower)) continue;
        if (lower === 'content-length') this.remaining = Number((rawHeaders[i + 1] as Buffer).toString('latin1'));
      }
      out.push(name, (rawHeaders[i + 1] as Buffer).toString('latin1'));
    }
    const extra = this.o.responseHeaders;
    for (let i = 0; i < extra.length; i++) out.push(extra[i] as string);
    out.push(
      'Via', VIA,
      'X-Kong-Upstream-Latency', String(Math.round(now - this.sentAt)),
      'X-Kong-Proxy-Latency', String(Math.round(this.sentAt - this.o.startedAt)),
    );
    this.res.writeHead(statusCode, statusText || undefined, out);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.remaining === chunk.length) {
      // The whole (rest of the) body: headers and body leave in one write.
      this.remaining = 0;
      this.res.end(chunk);
      return true;
    }
    if (this.remaining > 0) this.remaining -= chunk.length;
    if (this.res.write(chunk)) return true;
    this.res.once('drain', this.onDrain);
    return false;
  }

  onComplete(): void {
    this.done = true;
    if (!this.res.writableEnded) this.res.end();
  }

  onError(err: Error): void {
    if (this.done) return;
    if (this.res.headersSent || this.res.destroyed) {
      this.done = true;
      this.res.destroy();
      return;
    }
    const code = (err as { code?: string }).code ?? '';
    const replayable = this.o.body === null || Buffer.isBuffer(this.o.body);
    if (replayable && RETRYABLE.has(code) && this.attempts < this.o.service.retries) {
      this.attempts++;
      this.start();
      return;
    }
    this.done = true;
    this.o.onFailure(classify(err));
  }
}

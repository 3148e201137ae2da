/**
 * One proxied exchange over an undici Pool, through its low-level dispatch
 * handler: response headers are copied from the raw list, the body is
 * streamed with backpressure both ways, connection failures are retried up
 * to `retries` when the request body can be replayed, a streamed request
 * body stalled by the upstream for write_timeout ends the call, and errors
 * become Kong's 502/503/504 (kong/error_handlers.lua). Listeners are shared functions
 * (the call hangs off the response), so a request allocates no closures.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Peer } from './balancer.js';
import type { CompiledService } from './compile.js';
import { pushAddedHeaders } from './proxy-add-header.js';
import { SERVER, serverTokensOn } from './kong-response.js';
import { responseClosed } from './request-body.js';
import type { UpstreamSlots } from './upstream-slots.js';

const VIA = `1.1 ${SERVER}`;
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);
const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH']);
const TIMEOUTS = new Set(['UND_ERR_WRITE_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

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

/** Where an upstream call reports a failure before any response byte was sent (Exchange). */
export interface FailureSink {
  exit(failure: UpstreamFailure, errorHandler: boolean): void;
}

/** The call a response is attached to (no per-request listener closures). */
const CALL = Symbol('upstreamCall');
type WithCall = ServerResponse & { [CALL]?: UpstreamCall };
type BodyWithCall = IncomingMessage & { [CALL]?: UpstreamCall };

function onResponseDrain(this: WithCall): void {
  this[CALL]?.resumeUpstream();
}

/** undici paused the client body: the upstream is not taking writes (write_timeout starts). */
function onBodyPause(this: BodyWithCall): void {
  this[CALL]?.armWriteTimer();
}

function onBodyResume(this: BodyWithCall): void {
  this[CALL]?.disarmWriteTimer();
}

function onWriteTimeout(call: UpstreamCall): void {
  call.writeTimedOut();
}

/** write_timeout between two successive writes to the upstream → 504 (Kong passes it as the send timeout, kong/runloop/handler.lua). */
export class WriteTimeoutError extends Error {
  readonly code = 'UND_ERR_WRITE_TIMEOUT';
}

export class UpstreamCall implements Dispatcher.DispatchHandler {
  done = false;
  private abortFn: ((err?: Error) => void) | null = null;
  /**
   * Set when the client went away before undici handed over its abort function (the request still
   * waits for a pool connection, or is connecting): undici calls onConnect just before it writes
   * the request, and the request is aborted there instead of being sent (issue 45: reset HTTP/2
   * streams left their upstream requests running, each holding a connection to FHIR).
   */
  private cancelled: Error | null = null;
  /** This call holds its caller's slot (taken by the exchange before it starts, given back at its end). */
  private holding = true;
  private resumeFn: (() => void) | null = null;
  /** When the current attempt was sent, and the first one (Kong's proxy latency ends there). */
  sentAt = 0;
  firstSentAt = 0;
  /** When the upstream's response headers arrived (0: none did, the response is Kong's). */
  respondedAt = 0;
  private attempts = 0;
  private drainHooked = false;
  private writeTimer: NodeJS.Timeout | null = null;
  /** Bytes of body still expected (content-length), or -1 when unknown. */
  private remaining = -1;
  /** The balancer's peer of the current attempt (services whose host names an upstream). */
  private peer: Peer | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly sink: FailureSink,
    private readonly service: CompiledService,
    private readonly method: string,
    private readonly path: string,
    private readonly headers: string[],
    /** A replayable body (plugin-buffered), the client stream, or null. */
    private readonly body: Buffer | IncomingMessage | null,
    /** Extra downstream headers (plugins, request id); flat pairs. */
    private readonly responseHeaders: string[],
    private readonly startedAt: number,
    /** The proxy's upstream requests in flight, and this call's key there (a slot already taken). */
    private readonly slots: UpstreamSlots,
    private readonly slotKey: string,
    /** Set the Host header to the balancer peer's (preserve_host off). */
    private readonly peerHost = false,
  ) {
    // The response's close reaches responseClosed() through the exchange (exchange.ts), not a listener of its own.
    (res as WithCall)[CALL] = this;
    if (body !== null && !Buffer.isBuffer(body)) {
      // Only a streamed body can stall on the upstream side; GETs pay nothing.
      (body as BodyWithCall)[CALL] = this;
      body.on('pause', onBodyPause);
      body.on('resume', onBodyResume);
      body.once('end', onBodyResume);
    }
  }

  start(): void {
    if (this.cancelled !== null || responseClosed(this.res)) {
      // The client is gone (a stream reset while plugins ran, or before a retry): nothing goes upstream.
      this.finish();
      return;
    }
    this.sentAt = performance.now();
    if (this.firstSentAt === 0) this.firstSentAt = this.sentAt;
    const s = this.service;
    let pool = s.pool;
    if (s.balancer !== null) {
      // Each attempt asks the balancer; a retry goes to another peer when there is one (Kong's balancer retries).
      const peer = s.balancer.pick(this.peer);
      if (peer === null) {
        this.finish();
        this.sink.exit({ status: 503, message: 'failure to get a peer from the ring-balancer' }, true);
        return;
      }
      this.peer = peer;
      pool = peer.pool;
      if (this.peerHost) this.setHost(peer.hostHeader);
    }
    (pool as NonNullable<typeof pool>).dispatch(
      { method: this.method, path: this.path, headers: this.headers, body: this.body, headersTimeout: s.readTimeout, bodyTimeout: s.readTimeout },
      this,
    );
  }

  private setHost(value: string): void {
    const h = this.headers;
    for (let i = h.length - 2; i >= 0; i -= 2) {
      if (h[i] === 'host') {
        h[i + 1] = value;
        return;
      }
    }
  }

  /** The client's response closed: a call still running is aborted (its caller's slot freed at once). */
  responseClosed(): void {
    if (!this.done) this.abort(new Error('client closed'));
  }

  abort(err: Error): void {
    // The client is gone: its share is free at once, whatever undici still has to do to drop the request
    // (a key holder resetting streams held the share of its consumer with requests nobody wanted).
    if (this.holding) {
      this.holding = false;
      this.slots.release(this.slotKey);
    }
    if (this.abortFn !== null) this.abortFn(err);
    else this.cancelled ??= err;
  }

  resumeUpstream(): void {
    this.resumeFn?.();
  }

  armWriteTimer(): void {
    if (this.done || this.writeTimer !== null) return;
    this.writeTimer = setTimeout(onWriteTimeout, this.service.writeTimeout, this);
  }

  disarmWriteTimer(): void {
    if (this.writeTimer === null) return;
    clearTimeout(this.writeTimer);
    this.writeTimer = null;
  }

  writeTimedOut(): void {
    this.writeTimer = null;
    if (!this.done) this.abortFn?.(new WriteTimeoutError('upstream write timed out'));
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortFn = abort;
    if (this.cancelled !== null) abort(this.cancelled);
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    this.resumeFn = resume;
    if (responseClosed(this.res)) {
      this.abortFn?.(new Error('client closed'));
      return false;
    }
    if (this.peer !== null) this.service.balancer?.reportStatus(this.peer, statusCode);
    const now = performance.now();
    this.respondedAt = now;
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
    const extra = this.responseHeaders;
    for (let i = 0; i < extra.length; i++) out.push(extra[i] as string);
    if (serverTokensOn()) out.push('Via', VIA);
    pushAddedHeaders(statusCode, out);
    out.push(
      'X-Kong-Upstream-Latency', String(Math.round(now - this.sentAt)),
      'X-Kong-Proxy-Latency', String(Math.round(this.sentAt - this.startedAt)),
    );
    // HTTP/2 has no reason phrase (Node warns if given one).
    const h2 = (this.res as { stream?: unknown }).stream !== undefined;
    this.res.writeHead(statusCode, h2 ? undefined : statusText || undefined, out);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (responseClosed(this.res)) {
      // Never pause on a response nobody reads: that would hold the upstream connection until read_timeout.
      this.abortFn?.(new Error('client closed'));
      return false;
    }
    if (this.remaining === chunk.length) {
      // The whole (rest of the) body: headers and body leave in one write.
      this.remaining = 0;
      this.res.end(chunk);
      return true;
    }
    if (this.remaining > 0) this.remaining -= chunk.length;
    if (this.res.write(chunk)) return true;
    if (!this.drainHooked) {
      this.drainHooked = true;
      this.res.on('drain', onResponseDrain);
    }
    return false;
  }

  onComplete(): void {
    this.finish();
    if (!this.res.writableEnded) this.res.end();
  }

  onError(err: Error): void {
    if (this.done) return;
    if (this.res.headersSent || responseClosed(this.res)) {
      this.finish();
      this.res.destroy();
      return;
    }
    const code = (err as { code?: string }).code ?? '';
    if (this.peer !== null && (RETRYABLE.has(code) || TIMEOUTS.has(code))) {
      this.service.balancer?.reportFailure(this.peer, TIMEOUTS.has(code) ? 'timeout' : 'tcp');
    }
    const replayable = this.body === null || Buffer.isBuffer(this.body);
    if (replayable && RETRYABLE.has(code) && this.attempts < this.service.retries) {
      this.attempts++;
      this.start();
      return;
    }
    this.finish();
    this.sink.exit(classify(err), true);
  }

  private finish(): void {
    this.done = true;
    if (this.holding) {
      this.holding = false;
      this.slots.release(this.slotKey);
    }
    if (this.writeTimer !== null) this.disarmWriteTimer();
  }
}

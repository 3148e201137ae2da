/**
 * One request through the gateway: run the route's precomputed plugin chain
 * (sync unless a plugin needs to wait), then proxy upstream or answer with
 * Kong's response. Header filters of plugins that ran apply either way.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { PrometheusLogEntry } from '../plugins/prometheus/exporter.js';
import type { Exit, PluginRunner } from '../plugins/types.js';
import type { CompiledRoute } from './compile.js';
import { sendKongResponse } from './kong-response.js';
import { resolveSlot, type ChainSlot } from './plugin-chain.js';
import { BODY_BUDGET_MESSAGE, BODY_TIMEOUT_MESSAGE, BodyReadError } from './request-body.js';
import type { ProxyRequestState } from './request-state.js';
import type { RequestHead } from './request-head.js';
import { UpstreamCall, type FailureSink } from './upstream-call.js';
import { callerKey, type UpstreamSlots } from './upstream-slots.js';
import { upstreamHeaders } from './upstream-headers.js';
import { upstreamPathV0 } from './upstream-uri.js';

export const TOO_MANY_IN_FLIGHT = 'Too many requests in progress';

/**
 * The exchange a response belongs to: the proxy's one close listener (gateway-proxy.ts) finds it here and
 * runs its log phase and ends its upstream call (no per-request closure, no second or third listener).
 */
const EXCHANGE = Symbol('exchange');
type WithExchange = ServerResponse & { [EXCHANGE]?: Exchange };

/** The response closed (answered or cut): the exchange's log phase, then its upstream call's end. */
export function exchangeResponseClosed(res: ServerResponse): void {
  const exchange = (res as WithExchange)[EXCHANGE];
  if (exchange === undefined) return;
  (res as WithExchange)[EXCHANGE] = undefined;
  exchange.responseClosed();
}

/**
 * Bytes read and written on an HTTP/1 connection when its previous request ended (nginx request_length /
 * bytes_sent per request), kept on the socket itself: a WeakMap lookup and a new record per request cost
 * more than two numbers on an object that lives as long (issue 49).
 */
const BYTES_READ = Symbol('bytesReadMark');
const BYTES_WRITTEN = Symbol('bytesWrittenMark');
type MarkedSocket = Socket & { [BYTES_READ]?: number; [BYTES_WRITTEN]?: number };

export class Exchange implements FailureSink {
  private filters: PluginRunner[] | null = null;
  /** The chain whose log phases run once the response closes (null: no plugin has one, or no route ran). */
  private logChain: readonly ChainSlot[] | null = null;
  private call: UpstreamCall | null = null;
  /**
   * The connection, kept from the start: once the response has closed, Node has detached it
   * (`req.socket` is null), and a client that hangs up mid-body made the log phase throw and
   * the whole gateway exit (a 20,000-resource Bundle cut by its client, issue 24).
   */
  private readonly socket: Socket | null;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly state: ProxyRequestState,
    readonly route: CompiledRoute | null,
    readonly prefix: string | null,
    /** Host, body presence and Accept, read once from the raw headers. */
    readonly head: RequestHead,
    readonly requestId: string,
    readonly startedAt: number,
    /** The proxy's count of upstream requests in flight. */
    private readonly slots: UpstreamSlots,
    /** The peer is in trusted_ips (its X-Forwarded-* are passed on). */
    readonly trusted = false,
  ) {
    this.socket = (req.socket as Socket | null) ?? null;
    (res as WithExchange)[EXCHANGE] = this;
  }

  /** Called once, when the response closes (exchangeResponseClosed). */
  responseClosed(): void {
    if (this.logChain !== null) this.logPhase();
    this.call?.responseClosed();
  }

  /** Runs `chain` from slot `i`; then proxies (route) or stops (no route). */
  run(chain: readonly ChainSlot[], i: number): void {
    if (i === 0 && this.route !== null && this.route.logs) this.watchEnd(chain);
    const state = this.state;
    const https = state.scheme === 'https';
    for (; i < chain.length; i++) {
      const runner = resolveSlot(chain[i] as ChainSlot, state.consumer === null ? null : state.consumer.id, https);
      if (runner === null) continue;
      if (runner.header !== undefined) (this.filters ??= []).push(runner);
      if (runner.access === undefined) continue;
      let r;
      try {
        r = runner.access(state);
      } catch (err) {
        this.internalError(err);
        return;
      }
      if (r instanceof Promise) {
        const next = i + 1;
        r.then((exit) => (exit ? this.exit(exit) : this.run(chain, next)), (err: unknown) => this.failed(err));
        return;
      }
      if (r) {
        this.exit(r);
        return;
      }
    }
    if (this.route !== null) this.proxy(this.route);
  }

  /** Kong collects every plugin of the route's chain, even past an early exit: their log phases run at the end. */
  private watchEnd(chain: readonly ChainSlot[]): void {
    this.logChain = chain;
  }

  /** The request is over (answered or cut): what Kong's log phase sees, to each instance that applies. */
  logPhase(): void {
    const chain = this.logChain;
    const route = this.route;
    if (chain === null || route === null) return;
    this.logChain = null;
    const end = performance.now();
    const call = this.call;
    const responded = call !== null && call.respondedAt > 0;
    let ingress = 0;
    let egress = 0;
    const socket = this.socket as MarkedSocket | null;
    if (this.req.httpVersionMajor < 2 && socket !== null) {
      const read = socket.bytesRead;
      const written = socket.bytesWritten;
      ingress = read - (socket[BYTES_READ] ?? 0);
      egress = written - (socket[BYTES_WRITTEN] ?? 0);
      socket[BYTES_READ] = read;
      socket[BYTES_WRITTEN] = written;
    }
    const entry: PrometheusLogEntry = {
      service: route.service.label,
      route: route.route.name ?? route.route.id,
      consumer: this.state.consumer?.username ?? null,
      status: this.res.statusCode,
      source: responded ? 'service' : 'kong',
      latencies: {
        kong: Math.round((call !== null && call.firstSentAt > 0 ? call.firstSentAt : end) - this.startedAt),
        proxy: responded ? Math.round(call.respondedAt - call.sentAt) : null,
        request: Math.round(end - this.startedAt),
      },
      ingress,
      egress,
    };
    const https = this.state.scheme === 'https';
    const consumerId = this.state.consumer === null ? null : this.state.consumer.id;
    for (const slot of chain) {
      const runner = resolveSlot(slot, consumerId, https);
      if (runner?.log === undefined) continue;
      try {
        runner.log(entry);
      } catch (err) {
        process.stderr.write(`gateway: ${runner.name} log phase failed (${(err as Error)?.name ?? 'unknown'}) on request ${this.requestId}\n`);
      }
    }
  }

  /** Header filters only (no access phase): global plugins on a 404. */
  useHeaderFilters(chain: readonly ChainSlot[]): void {
    for (const slot of chain) {
      const runner = resolveSlot(slot, null, this.state.scheme === 'https');
      if (runner?.header !== undefined) (this.filters ??= []).push(runner);
    }
  }

  /** Response headers from plugins: access-phase ones, then header filters. */
  private pluginHeaders(): string[] {
    const out = this.state.responseHeaders === null ? [] : this.state.responseHeaders.slice();
    if (this.filters !== null) for (const f of this.filters) f.header?.(this.state, out);
    return out;
  }

  exit(e: Exit, errorHandler = false): void {
    const headers = e.headers ? e.headers.concat(this.pluginHeaders()) : this.pluginHeaders();
    sendKongResponse(this.res, {
      status: e.status,
      message: e.message,
      requestId: this.requestId,
      accept: this.head.accept,
      errorHandler,
      startedAt: this.startedAt,
      method: this.state.method,
      headers,
    });
  }

  /** A plugin's promise or the body read failed: a body that could not be read is answered as such, anything else is a 500. */
  private failed(err: unknown): void {
    if (err instanceof BodyReadError) this.bodyFailed(err);
    else this.internalError(err);
  }

  /**
   * The body could not be read whole: 408 on a stalled read (nginx's client_body_timeout), 503 past the
   * memory budget, nothing when the client left. The unread rest of the body is not waited for: an HTTP/1.1
   * connection closes after the answer, an HTTP/2 stream is reset once answered.
   */
  private bodyFailed(err: BodyReadError): void {
    const { req, res } = this;
    if (err.status === 0) {
      res.destroy();
      return;
    }
    const h2 = req.httpVersionMajor === 2;
    const headers = h2 ? [] : ['Connection', 'close'];
    if (err.status === 503) headers.push('Retry-After', '1');
    this.exit({ status: err.status, message: err.status === 408 ? BODY_TIMEOUT_MESSAGE : BODY_BUDGET_MESSAGE, headers });
    if (h2) res.once('finish', () => (req as unknown as { stream: { close(): void } }).stream.close());
  }

  private internalError(err: unknown): void {
    // Only the error's kind: messages could echo request data (keys, passwords).
    process.stderr.write(`gateway: plugin error (${(err as Error)?.name ?? 'unknown'}) on request ${this.requestId}\n`);
    this.exit({ status: 500, message: 'An unexpected error occurred' });
  }

  private proxy(route: CompiledRoute): void {
    const { req, state, head } = this;
    const service = route.service;
    const r = route.route;
    const path = upstreamPathV0(service.basePath, state.path, this.prefix ?? '', r.strip_path);
    const hostHeader = head.host;
    const colon = hostHeader.lastIndexOf(':');
    const forwardedHost = colon > 0 && !hostHeader.endsWith(']') ? hostHeader.slice(0, colon) : hostHeader;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let body: Buffer | IncomingMessage | null = state.body;
    if (body === null && !state.bodyRead && head.hasBody) {
      if (r.request_buffering) {
        // Kong's proxy_request_buffering on: the whole body first, then the upstream request (issue 45).
        state.readBody(Infinity).then(() => this.proxy(route), (err: unknown) => this.failed(err));
        return;
      }
      body = req;
    }
    const slotKey = callerKey(service.id, state.consumer === null ? null : state.consumer.id, state.clientIp);
    if (!this.slots.tryAcquire(slotKey)) {
      // This caller already has its share of the service's connections in use (upstream-slots.ts).
      this.exit({ status: 429, message: TOO_MANY_IN_FLIGHT, headers: ['Retry-After', '1'] });
      return;
    }
    const responseHeaders = this.pluginHeaders();
    responseHeaders.push('X-Kong-Request-Id', this.requestId);
    const headers = upstreamHeaders(req.rawHeaders, state.upstreamHeaders, {
      host: r.preserve_host && hostHeader !== '' ? hostHeader : service.hostHeader,
      clientIp: state.clientIp,
      scheme: state.scheme,
      forwardedHost,
      forwardedPort: req.socket.localPort ?? 0,
      forwardedPath: q < 0 ? url : url.slice(0, q),
      prefix: r.strip_path ? this.prefix : null,
      requestId: this.requestId,
      bodyLength: state.body === null ? null : state.body.length,
      trusted: this.trusted,
    });
    const target = state.query === '' ? path : `${path}?${state.query}`;
    const peerHost = service.balancer !== null && !(r.preserve_host && hostHeader !== '');
    this.call = new UpstreamCall(this.res, this, service, state.method, target, headers, body, responseHeaders, this.startedAt, this.slots, slotKey, peerHost);
    this.call.start();
  }
}

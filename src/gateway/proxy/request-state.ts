/** The per-request state the proxy and plugins share (plugins/types.ts RequestState). */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Consumer } from '../model/types.js';
import type { RequestState } from '../plugins/types.js';
import { readWholeBody, type BodyBudget } from './request-body.js';

export class ProxyRequestState implements RequestState {
  consumer: Consumer | null = null;
  credentialId: string | null = null;
  authenticated = false;
  upstreamHeaders: Map<string, string | null> | null = null;
  body: Buffer | null = null;
  responseHeaders: string[] | null = null;
  /** Set once readBody has consumed the request stream. */
  bodyRead = false;
  private readingBody: Promise<Buffer | null> | null = null;

  constructor(
    readonly req: IncomingMessage,
    readonly method: string,
    readonly path: string,
    public query: string,
    readonly scheme: 'http' | 'https',
    readonly clientIp: string,
    readonly serviceId: string,
    readonly routeId: string,
    /** A body follows (request-head.ts: any framing, HTTP/2 included). */
    readonly hasBody: boolean,
    /** The response whose close gives a read body's bytes back to `budget`. */
    private readonly res: ServerResponse,
    /** The proxy's memory budget for bodies (request-body.ts). */
    private readonly budget: BodyBudget,
  ) {}

  header(name: string): string | undefined {
    const v = this.req.headers[name];
    return Array.isArray(v) ? v[0] : v;
  }

  setUpstreamHeader(name: string, value: string | null): void {
    (this.upstreamHeaders ??= new Map()).set(name, value);
  }

  addResponseHeader(name: string, value: string): void {
    (this.responseHeaders ??= []).push(name, value);
  }

  /**
   * Reads the whole body (at most `limit` bytes: null past it), within the body time-out and
   * the proxy's memory budget (request-body.ts: rejects with BodyReadError otherwise).
   */
  readBody(limit: number): Promise<Buffer | null> {
    if (this.readingBody) return this.readingBody;
    this.bodyRead = true;
    this.readingBody = readWholeBody(this.req, this.res, limit, this.budget).then((body) => (this.body = body));
    return this.readingBody;
  }
}

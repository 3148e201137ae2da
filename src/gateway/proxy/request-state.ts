/** The per-request state the proxy and plugins share (plugins/types.ts RequestState). */
import type { IncomingMessage } from 'node:http';
import type { Consumer } from '../model/types.js';
import type { RequestState } from '../plugins/types.js';

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
    readonly hasBody = false,
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

  readBody(limit: number): Promise<Buffer | null> {
    if (this.readingBody) return this.readingBody;
    this.bodyRead = true;
    this.readingBody = new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const onData = (chunk: Buffer): void => {
        size += chunk.length;
        if (size > limit) {
          this.req.off('data', onData);
          this.req.pause();
          resolve(null);
          return;
        }
        chunks.push(chunk);
      };
      this.req.on('data', onData);
      this.req.once('end', () => {
        if (size <= limit) {
          this.body = Buffer.concat(chunks);
          resolve(this.body);
        }
      });
      this.req.once('error', reject);
    });
    return this.readingBody;
  }
}

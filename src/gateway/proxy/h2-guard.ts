/**
 * HTTP/2 bounds per connection and per client (issue 45, the CVE-2023-44487
 * "rapid reset" pattern: a client opens streams and resets them at once, so
 * the server starts work for each and the protocol's concurrent-stream limit
 * never bites):
 * - SETTINGS_MAX_CONCURRENT_STREAMS per connection (nginx's
 *   http2_max_concurrent_streams, 128), given to Node's server settings;
 * - streams open at once per client address, over all its connections: past
 *   `h2MaxStreamsPerClient` a new stream is refused (RST_STREAM REFUSED_STREAM,
 *   RFC 9113 §8.7: the client may retry it) before any work starts;
 * - streams the client resets, counted per connection and per client address
 *   over one-second windows: past `h2MaxResetsPerSecond` on a connection, or
 *   `h2MaxResetsPerClientPerSecond` over the client's connections, the
 *   connection is closed with GOAWAY ENHANCE_YOUR_CALM, as nginx (1.25.3,
 *   "limited the number of streams… per event loop iteration") and nghttp2's
 *   stream reset rate limit, which Node's own mitigation uses, do.
 * Each reset stream's upstream request is cancelled by the proxy itself
 * (upstream-call.ts), so what is left running after a reset is bounded too.
 */
import { constants, type Http2SecureServer, type Http2Session, type ServerHttp2Stream } from 'node:http2';

export interface H2Limits {
  /** SETTINGS_MAX_CONCURRENT_STREAMS of every connection. */
  h2MaxConcurrentStreams: number;
  /** Streams open at once from one client address, over all its connections. */
  h2MaxStreamsPerClient: number;
  /** Streams one connection may reset in a second before it is closed. */
  h2MaxResetsPerSecond: number;
  /** Streams one client address may reset in a second, over its connections, before the connection resetting is closed. */
  h2MaxResetsPerClientPerSecond: number;
}

export const DEFAULT_H2_LIMITS: H2Limits = {
  h2MaxConcurrentStreams: 128,
  h2MaxStreamsPerClient: 512,
  h2MaxResetsPerSecond: 100,
  h2MaxResetsPerClientPerSecond: 200,
};

/** Streams refused here: the request handler skips them. */
const REFUSED = Symbol('h2Refused');

export function refusedStream(stream: unknown): boolean {
  return (stream as { [REFUSED]?: boolean } | undefined)?.[REFUSED] === true;
}

/** Resets counted in the current one-second window. */
class ResetWindow {
  private start = 0;
  private count = 0;

  /** Counts one reset now; the count in this second. */
  add(now: number): number {
    if (now - this.start >= 1000) {
      this.start = now;
      this.count = 0;
    }
    return ++this.count;
  }
}

interface Client {
  streams: number;
  sessions: number;
  resets: ResetWindow;
}

export interface H2GuardStats {
  /** Streams refused at the per-client cap. */
  refused: number;
  /** Connections closed for resetting too many streams. */
  calmed: number;
}

/** Guards every HTTP/2 session of `server`: call once, before it listens. */
export function guardH2(server: Http2SecureServer, limits: H2Limits): () => H2GuardStats {
  const clients = new Map<string, Client>();
  const stats: H2GuardStats = { refused: 0, calmed: 0 };

  const calm = (session: Http2Session): void => {
    if (session.destroyed || session.closed) return;
    stats.calmed++;
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    // Closes the connection on the gateway's side at once (its socket cannot be touched directly:
    // Node's session socket proxy throws ERR_HTTP2_NO_SOCKET_MANIPULATION on destroy).
    session.destroy();
  };

  server.on('session', (session: Http2Session) => {
    const address = session.socket?.remoteAddress ?? '';
    let client = clients.get(address);
    if (client === undefined) {
      client = { streams: 0, sessions: 0, resets: new ResetWindow() };
      clients.set(address, client);
    }
    const c = client;
    c.sessions++;
    const resets = new ResetWindow();
    session.once('close', () => {
      if (--c.sessions === 0 && c.streams === 0) clients.delete(address);
    });
    // Before Node's own listener, which hands the stream to the request handler: a refused stream starts no work.
    session.prependListener('stream', (stream: ServerHttp2Stream) => {
      if (c.streams >= limits.h2MaxStreamsPerClient) {
        stats.refused++;
        (stream as unknown as Record<symbol, boolean>)[REFUSED] = true;
        stream.close(constants.NGHTTP2_REFUSED_STREAM);
        return;
      }
      c.streams++;
      stream.once('close', () => {
        c.streams--;
        if (c.sessions === 0 && c.streams === 0) clients.delete(address);
        // Closed with an error code: reset by the client (RST_STREAM), or cut by the gateway because the client
        // went away. Node's 'aborted' misses a stream reset once its answer has ended, so the code is what counts.
        if (stream.rstCode === constants.NGHTTP2_NO_ERROR || stream.rstCode === undefined || session.destroyed) return;
        const now = Date.now();
        const here = resets.add(now);
        const all = c.resets.add(now);
        if (here > limits.h2MaxResetsPerSecond || all > limits.h2MaxResetsPerClientPerSecond) calm(session);
      });
    });
  });
  return () => ({ ...stats });
}

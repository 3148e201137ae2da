/**
 * Bounds every socket of one node:http, node:https or node:http2 secure server
 * (issue 24): header, request and keep-alive time-outs, a TLS handshake
 * deadline, an idle deadline for a connection with no request in progress
 * (which covers a raw TCP connect that never sends a byte: Node's
 * headersTimeout only starts counting at a request's first byte), and a
 * connection cap that, when full, closes the connection idle the longest
 * rather than refusing the newcomer.
 *
 * Node's own `server.maxConnections` refuses the newcomer, so an attacker who
 * holds the cap with silent sockets locks every honest caller (and the
 * supervisor's health probe) out; here the idlest connection makes room.
 * A connection whose requests are all still arriving (a body not yet complete:
 * a held or trickled upload) may be closed too (issue 45: 1,030 held uploads at
 * the API's cap of 1,024 reset the honest caller): of the idlest connection and
 * the one whose upload began the longest ago, the one that made progress last
 * the longest ago goes, so an honest caller between two requests is not closed
 * for an upload that has been hanging for seconds. A request that has fully
 * arrived is never cut. Only when every connection has a whole request in
 * progress is the newcomer refused (closed at once, which tells a prober the
 * process is alive).
 *
 * Node references: http.createServer options headersTimeout, requestTimeout,
 * keepAliveTimeout, connectionsCheckingInterval (https://nodejs.org/api/http.html#httpcreateserveroptions-requestlistener);
 * tls.createServer handshakeTimeout (https://nodejs.org/api/tls.html#tlscreateserveroptions-secureconnectionlistener),
 * which http2.createSecureServer and https.createServer pass on to tls.Server.
 */
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';

export interface SocketLimits {
  /** Whole request head (HTTP/1) must arrive within this, counted from its first byte. */
  headersTimeoutMs: number;
  /** Whole request (head and body) must arrive within this. */
  requestTimeoutMs: number;
  /** Idle time between requests on a keep-alive connection. */
  keepAliveTimeoutMs: number;
  /** A TLS connection must finish its handshake within this (wall clock, from connect). */
  handshakeTimeoutMs: number;
  /** A connection with no request in progress (silent, trickling headers, or between requests) is closed after this. */
  idleTimeoutMs: number;
  /** Open connections; at the cap a newcomer closes the idlest one. */
  maxConnections: number;
}

/** Options for the server constructor: pass these to createServer / createSecureServer. */
export function serverTimeouts(l: SocketLimits): {
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionsCheckingInterval: number;
  handshakeTimeout: number;
} {
  return {
    headersTimeout: Math.min(l.headersTimeoutMs, l.requestTimeoutMs),
    requestTimeout: l.requestTimeoutMs,
    keepAliveTimeout: l.keepAliveTimeoutMs,
    connectionsCheckingInterval: checkEvery(l),
    handshakeTimeout: l.handshakeTimeoutMs,
  };
}

function checkEvery(l: SocketLimits): number {
  return Math.max(25, Math.min(1_000, Math.floor(Math.min(l.headersTimeoutMs, l.idleTimeoutMs, l.handshakeTimeoutMs) / 4)));
}

const ENTRY = Symbol('hospital-api.socket-guard');

interface Entry {
  /** The socket to destroy: the TCP socket, then its TLS socket once secured. */
  socket: Socket;
  tls: boolean;
  secured: boolean;
  connectedAt: number;
  /** Last time a request began or ended (or the connection opened / was secured). */
  lastActive: number;
  inFlight: number;
  /** Its requests in progress (`complete` once the whole request, body included, has arrived). */
  requests: Set<{ readonly complete: boolean }>;
  /** Neighbours in the IdleOrder, while the connection is in it. */
  older: Entry | null;
  newer: Entry | null;
  queued: boolean;
  /** Its server's bookkeeping when one of its requests ends (one function per server, not a closure per request). */
  ended: (e: Entry, req: { readonly complete: boolean }) => void;
}

/** The connection and request a response belongs to, read by the one shared close listener below. */
const RES_ENTRY = Symbol('hospital-api.socket-guard.entry');
const RES_REQUEST = Symbol('hospital-api.socket-guard.request');
type MarkedResponse = { [RES_ENTRY]?: Entry; [RES_REQUEST]?: { readonly complete: boolean } };

/**
 * A response closed: its request is over. A shared function with the entry on the response, where a
 * closure per request with `once` cost an allocation, a bound wrapper and a listener removal on every
 * proxied request (issue 49: the gateway's CPU per request against a bare proxy's).
 */
function onResponseClose(this: MarkedResponse): void {
  const entry = this[RES_ENTRY];
  const req = this[RES_REQUEST];
  if (entry === undefined || req === undefined) return;
  this[RES_ENTRY] = undefined;
  entry.ended(entry, req);
}

/**
 * The connections that may be dropped at the cap (open, no request in
 * progress), least recently active first, as a doubly linked list through the
 * entries: taking the idlest, moving one to the back on activity and removing
 * one are each O(1), so a flood of newcomers at a cap of 10,000 costs the same
 * per connection as at a cap of 10. (A Set re-inserted on activity keeps the
 * same order, but V8's ordered hash tables leave a deleted slot in place until
 * the next rehash, and an iterator from the front walks over every one of
 * them: dropping from the front over and over makes "the first" linear again.)
 */
class IdleOrder {
  private oldest: Entry | null = null;
  private newest: Entry | null = null;

  /** The connection idle the longest, or null when every connection has a request in progress. */
  first(): Entry | null {
    return this.oldest;
  }

  /** Puts `e` at the back: it was active just now. */
  touch(e: Entry): void {
    this.remove(e);
    e.older = this.newest;
    e.newer = null;
    if (this.newest) this.newest.newer = e;
    else this.oldest = e;
    this.newest = e;
    e.queued = true;
  }

  remove(e: Entry): void {
    if (!e.queued) return;
    if (e.older) e.older.newer = e.newer;
    else this.oldest = e.newer;
    if (e.newer) e.newer.older = e.older;
    else this.newest = e.older;
    e.older = null;
    e.newer = null;
    e.queued = false;
  }
}

export interface SocketGuardStats {
  open: number;
  /** Closed to make room at the cap: idle, or (`shed`) still sending every request it began. */
  evicted: number;
  /** Of `evicted`, those closed while sending a request (an upload not yet complete). */
  shed: number;
  /** Refused at the cap because every connection had a request in progress. */
  refused: number;
  /** Closed for a handshake or an idle deadline. */
  timedOut: number;
}

export interface SocketGuard {
  stats(): SocketGuardStats;
  /** Stops the sweep (the server's close() does not). */
  stop(): void;
}

type GuardedServer = NetServer & {
  headersTimeout?: number;
  requestTimeout?: number;
  keepAliveTimeout?: number;
};

/**
 * Guards `server`: call once, before it listens. `tls` (default: detected) is
 * true for an https or http2 secure server. The server's own `maxConnections` is lifted: the cap is
 * enforced here.
 */
export function guardSockets(server: NetServer, limits: SocketLimits, opts: { tls?: boolean } = {}): SocketGuard {
  // A tls.Server (https, http2 secure) has setSecureContext; its 'secureConnection' hands over the TLS socket.
  const tls = opts.tls ?? typeof (server as { setSecureContext?: unknown }).setSecureContext === 'function';
  const s = server as GuardedServer;
  // Node keeps these on the server object; an HTTP/2 secure server uses them for its HTTP/1.1 side.
  s.headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  s.requestTimeout = limits.requestTimeoutMs;
  s.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = Number.MAX_SAFE_INTEGER;
  const entries = new Set<Entry>();
  // Invariant: an entry is in `idle` exactly when it is in `entries` with no request in progress.
  const idle = new IdleOrder();
  const stats = { evicted: 0, shed: 0, refused: 0, timedOut: 0 };

  // Connections with a request in progress, the one whose latest request began the longest ago first
  // (re-inserted on each request); only these are scanned for an upload to shed, so a flood of silent
  // sockets costs nothing here.
  const busy = new Set<Entry>();
  const forget = (e: Entry): void => {
    entries.delete(e);
    busy.delete(e);
    idle.remove(e);
  };
  /** Activity on `e`: it becomes the newest drop candidate, unless it is gone or busy. */
  const active = (e: Entry): void => {
    e.lastActive = Date.now();
    if (e.inFlight === 0 && entries.has(e)) idle.touch(e);
  };

  /**
   * The busy connection whose latest request began the longest ago and whose requests in progress have all yet
   * to arrive whole. A scan of the busy connections, only at the cap, stopping at the first such one.
   */
  const stillSending = (): Entry | null => {
    for (const e of busy) {
      if (e.requests.size === 0) continue;
      let sending = true;
      for (const r of e.requests) if (r.complete) sending = false;
      if (sending) return e;
    }
    return null;
  };

  server.prependListener('connection', (raw: Socket) => {
    if (entries.size >= limits.maxConnections) {
      const idlest = idle.first();
      const sending = stillSending();
      // the one that made progress (a request began or ended) the longest ago
      const v = idlest && (!sending || idlest.lastActive <= sending.lastActive) ? idlest : sending;
      if (!v) {
        stats.refused += 1;
        raw.destroy();
        return;
      }
      if (v === sending) stats.shed += 1;
      stats.evicted += 1;
      forget(v);
      v.socket.destroy();
    }
    const now = Date.now();
    const entry: Entry = { socket: raw, tls, secured: false, connectedAt: now, lastActive: now, inFlight: 0, requests: new Set(), older: null, newer: null, queued: false, ended };
    (raw as unknown as Record<symbol, Entry>)[ENTRY] = entry;
    entries.add(entry);
    idle.touch(entry);
    raw.once('close', () => forget(entry));
  });

  if (tls) {
    server.on('secureConnection', (socket: Socket & { _parent?: Socket }) => {
      const entry = (socket._parent as unknown as Record<symbol, Entry> | undefined)?.[ENTRY];
      if (!entry) return;
      (socket as unknown as Record<symbol, Entry>)[ENTRY] = entry;
      entry.secured = true;
      entry.socket = socket;
      active(entry);
      socket.once('close', () => forget(entry));
    });
  }

  // HTTP/1 requests carry the socket itself; HTTP/2 compat requests a proxy that forwards property reads to the session's socket.
  const ended = (entry: Entry, req: { readonly complete: boolean }): void => {
    entry.inFlight -= 1;
    entry.requests.delete(req);
    if (entry.inFlight === 0) busy.delete(entry);
    active(entry);
  };

  server.on('request', (req: { socket?: unknown; readonly complete: boolean }, res: MarkedResponse & { on(event: 'close', fn: (this: MarkedResponse) => void): unknown }) => {
    const entry = (req.socket as Record<symbol, Entry> | undefined)?.[ENTRY];
    if (!entry) return;
    entry.inFlight += 1;
    entry.requests.add(req);
    entry.lastActive = Date.now();
    idle.remove(entry);
    busy.delete(entry);
    if (entries.has(entry)) busy.add(entry);
    res[RES_ENTRY] = entry;
    res[RES_REQUEST] = req;
    res.on('close', onResponseClose);
  });

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const e of entries) {
      const late = e.tls && !e.secured
        ? now - e.connectedAt > limits.handshakeTimeoutMs
        : e.inFlight === 0 && now - e.lastActive > limits.idleTimeoutMs;
      if (!late) continue;
      stats.timedOut += 1;
      forget(e);
      e.socket.destroy();
    }
  }, checkEvery(limits));
  sweep.unref();
  server.once('close', () => clearInterval(sweep));

  return {
    stats: () => ({ open: entries.size, ...stats }),
    stop: () => clearInterval(sweep),
  };
}

/** The limits of a plain-HTTP listener: no TLS handshake to bound. */
export type PlainHttpLimits = Omit<SocketLimits, 'handshakeTimeoutMs'>;

/** A plain node:http server with every socket bounded; with no TLS handshake, that deadline is the idle one. */
export function createBoundedHttpServer(
  limits: PlainHttpLimits,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): HttpServer {
  const bounds: SocketLimits = { ...limits, handshakeTimeoutMs: limits.idleTimeoutMs };
  const server = createServer(serverTimeouts(bounds), handler);
  guardSockets(server, bounds);
  return server;
}

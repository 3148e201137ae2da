/**
 * Raw TCP and TLS clients for listener tests (issue 24): a socket that sends
 * nothing, a stalled TLS handshake, trickled headers, and one honest request,
 * each reporting when the server closed it.
 */
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export interface Endpoint {
  host: string;
  port: number;
  /** A TLS listener; `ca` verifies its certificate. */
  tls?: { ca: string } | null;
}

export interface Held {
  socket: Socket;
  /** Resolves when the server closes the connection (or it errors). */
  closed: Promise<void>;
  isClosed(): boolean;
  received(): string;
}

function hold(socket: Socket): Held {
  let text = '';
  let done = false;
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  const closed = new Promise<void>((resolve) => {
    socket.once('close', () => {
      done = true;
      resolve();
    });
  });
  socket.on('error', () => {});
  return { socket, closed, isClosed: () => done, received: () => text };
}

/** A TCP connection that never sends a byte; resolves once connected. */
export async function silentSocket(at: Endpoint): Promise<Held> {
  const socket = connect(at.port, at.host);
  const held = hold(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return held;
}

/** A TLS handshake that stops half-way: a record header announcing a ClientHello that never comes. */
export async function stalledHandshake(at: Endpoint): Promise<Held> {
  const held = await silentSocket(at);
  held.socket.write(Buffer.from([0x16, 0x03, 0x01, 0x01, 0x00, 0x01]));
  return held;
}

/** Slowloris: a request line, then one header line every `everyMs`, never the blank line. */
export async function slowloris(at: Endpoint, everyMs = 50): Promise<Held & { stop(): void }> {
  const held = at.tls ? await secured(at) : await silentSocket(at);
  held.socket.write('GET / HTTP/1.1\r\nHost: a\r\n');
  let n = 0;
  const timer = setInterval(() => {
    if (!held.isClosed()) held.socket.write(`X-${n++}: a\r\n`);
  }, everyMs);
  void held.closed.then(() => clearInterval(timer));
  return { ...held, stop: () => clearInterval(timer) };
}

async function secured(at: Endpoint): Promise<Held> {
  const socket = tlsConnect({ host: at.host, port: at.port, ca: at.tls?.ca, ALPNProtocols: ['http/1.1'] });
  const held = hold(socket);
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  return held;
}

/** One HTTP/1.1 request on a new connection; the status code, or null when the connection closed without an answer. */
export async function honestRequest(at: Endpoint, path: string): Promise<number | null> {
  let held: Held;
  try {
    held = at.tls ? await secured(at) : await silentSocket(at);
  } catch {
    return null;
  }
  held.socket.write(`GET ${path} HTTP/1.1\r\nHost: ${at.host}\r\nConnection: close\r\n\r\n`);
  await held.closed;
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(held.received());
  return m ? Number(m[1]) : null;
}

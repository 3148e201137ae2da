/**
 * The status node:http's client-error path answered on a connection (issue 45). When a request's body does
 * not arrive within REQUEST_TIMEOUT_MS, or cannot be parsed, Node emits `clientError` and Fastify writes
 * 408 (or 400) straight to the socket, past every reply hook: without this, the request's audit line took
 * the unsent reply's default status. The app's listener notes it here; the request's PatientRequest reads
 * it when the connection closes (https://nodejs.org/api/http.html#event-clienterror).
 */
import type { Socket } from 'node:net';

const answered = new WeakMap<object, number>();

/** Notes what Fastify's default client-error handler writes for `err` (none when the caller has gone). */
export function noteClientError(err: { code?: string }, socket: Socket): void {
  // the caller closed its side mid-request (a reset, or the end of its stream mid-body): it left, nobody reads an answer
  if (err.code === 'ECONNRESET' || err.code === 'HPE_INVALID_EOF_STATE' || socket.destroyed) return;
  answered.set(socket, err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400);
}

/** The status node:http answered on `socket` outside any reply, if it did. */
export function clientErrorStatus(socket: object | null | undefined): number | undefined {
  return socket ? answered.get(socket) : undefined;
}

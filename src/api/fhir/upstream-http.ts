/**
 * Shared pieces of the two outgoing clients (platform, FHIR): an undici Agent
 * that verifies TLS against a configured CA, bounded body reads, and the
 * classification of transport failures into timeout / TLS / network.
 */
import { Agent, type Dispatcher } from 'undici';

/**
 * TLS verification stays on: `ca` replaces the trust store when given.
 * rejectUnauthorized is explicit so NODE_TLS_REJECT_UNAUTHORIZED=0 cannot turn it off.
 */
export function makeAgent(ca: string | null, timeoutMs: number): Agent {
  return new Agent({
    connect: ca === null ? { timeout: timeoutMs, rejectUnauthorized: true } : { ca, timeout: timeoutMs, rejectUnauthorized: true },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 10_000,
  });
}

/**
 * A deadline for one upstream request and its body, aborting as AbortSignal.timeout(ms) does (its reason a
 * TimeoutError DOMException, which classifyFailure names a time-out), but cleared once the request is done:
 * AbortSignal.timeout's timer runs its full length and then builds that DOMException, stack trace and all,
 * for every request long answered (issue 49: 40 of them per record of 40 pages). Like it, the timer does not
 * keep the process alive.
 */
export function deadline(ms: number): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
  timer.unref();
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/** Runs `work` under a deadline of `ms` (deadline()), cleared once `work` settles. */
export async function withDeadline<T>(ms: number, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const { signal, clear } = deadline(ms);
  try {
    return await work(signal);
  } finally {
    clear();
  }
}

/** Reads a response body as text, failing past `max` bytes. */
export async function readText(body: Dispatcher.ResponseData['body'], max: number): Promise<string> {
  return (await readBytes(body, max)).toString('utf8');
}

/** Thrown by readBytes past its limit (before the rest of the body is read). */
export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`response body larger than ${limit} bytes`);
  }
}

/** Reads a response body, failing past `max` bytes. */
export async function readBytes(body: Dispatcher.ResponseData['body'], max: number): Promise<Buffer> {
  const { chunks, size } = await readChunks(body, max);
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}

/** A body's chunks as received and their total size, failing past `max` bytes before the rest is read. */
export async function readChunks(body: Dispatcher.ResponseData['body'], max: number): Promise<{ chunks: Buffer[]; size: number }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > max) {
      body.destroy();
      throw new BodyTooLargeError(max);
    }
    chunks.push(chunk as Buffer);
  }
  return { chunks, size };
}

/** Drains and discards a body so the connection can be reused. */
export async function discard(body: Dispatcher.ResponseData['body']): Promise<void> {
  try {
    await body.dump({ limit: 64 * 1024 });
  } catch {
    // nothing to recover: the connection is simply not reused
  }
}

const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'EPROTO',
]);

export type FailureKind = 'timeout' | 'tls' | 'network';

export interface Failure {
  kind: FailureKind;
  /** A short reason safe to show (an error code, never a header or URL). */
  reason: string;
}

/** Names what went wrong with an outgoing request, without echoing headers. */
export function classifyFailure(err: unknown): Failure {
  let e = err as { code?: unknown; name?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = typeof e.code === 'string' ? e.code : '';
    const name = typeof e.name === 'string' ? e.name : '';
    if (name === 'TimeoutError' || /TIMEOUT/.test(code)) return { kind: 'timeout', reason: code || name };
    if (TLS_CODES.has(code) || /^ERR_TLS|^ERR_SSL/.test(code)) return { kind: 'tls', reason: code };
    if (code && code !== 'UND_ERR_SOCKET' && !e.cause) return { kind: 'network', reason: code };
    e = e.cause as typeof e;
  }
  const code = (err as { code?: unknown })?.code;
  return { kind: 'network', reason: typeof code === 'string' ? code : 'connection failed' };
}

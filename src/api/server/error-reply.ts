/**
 * The wire shape of every Hospital API error, built here and nowhere else:
 * {"error":{"code","message","requestId"}} with the code's status, and
 * Retry-After: 1 when trying again shortly can work (busy, audit log down).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';

/** Maps anything thrown in a route to the wire error. */
export function toApiError(err: unknown, bodyLimit: number): HospitalApiError {
  if (err instanceof HospitalApiError) return err;
  const e = err as FastifyError;
  if (e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new HospitalApiError('ERR_API_BODY_TOO_LARGE', { limit: bodyLimit });
  const detail: Record<string, string> = {
    FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Content-Type must be application/json',
    FST_ERR_CTP_EMPTY_JSON_BODY: 'empty body',
    FST_ERR_CTP_INVALID_JSON_BODY: 'body is not valid JSON',
  };
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new HospitalApiError('ERR_API_BAD_REQUEST', { detail: detail[e.code] ?? 'malformed request' });
  }
  if (e instanceof SyntaxError) return new HospitalApiError('ERR_API_BAD_REQUEST', { detail: 'body is not valid JSON' });
  return new HospitalApiError('ERR_INTERNAL', { detail: 'unexpected error' }, { cause: err });
}

/** Sets the status and headers of `err` on the reply and returns its body (for an onSend hook that replaces a payload). */
export function errorPayload(request: FastifyRequest, reply: FastifyReply, err: HospitalApiError): string {
  if (err.code === 'ERR_API_BUSY' || err.code === 'ERR_API_AUDIT_UNAVAILABLE') reply.header('retry-after', '1');
  reply.code(err.status).type('application/json; charset=utf-8');
  return JSON.stringify({ error: { code: err.code, message: err.message, requestId: request.id } });
}

/** Answers with `err`. */
export function sendError(request: FastifyRequest, reply: FastifyReply, err: HospitalApiError): FastifyReply {
  return reply.send(errorPayload(request, reply, err));
}

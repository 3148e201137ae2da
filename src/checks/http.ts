/** GETs for the checks, through undici, with the check's CA-verifying dispatcher. */
import { request, type Dispatcher } from 'undici';

export interface Reply {
  status: number;
  body: unknown;
  headers: Record<string, string | string[] | undefined>;
}

export async function httpGet(
  url: string,
  options: { dispatcher?: Dispatcher; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Reply> {
  const timeout = options.timeoutMs ?? 10_000;
  const res = await request(url, {
    method: 'GET',
    headers: { accept: 'application/fhir+json, application/json', ...options.headers },
    headersTimeout: timeout,
    bodyTimeout: timeout,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
  });
  const text = await res.body.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.statusCode, body, headers: res.headers };
}

export function isCapabilityStatement(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { resourceType?: unknown }).resourceType === 'CapabilityStatement';
}

/** A readable reason for a failed request; TLS errors name the certificate problem. */
export function describeFailure(err: unknown): string {
  const e = err as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.cause?.code ?? e.code;
  const message = e.cause?.message ?? e.message ?? String(err);
  return code ? `${code}: ${message}` : message;
}

const TLS_CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS|HOSTNAME|ALTNAME|DEPTH_ZERO/;

export function isTlsFailure(err: unknown): boolean {
  return TLS_CODES.test(describeFailure(err));
}

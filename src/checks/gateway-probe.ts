/** One HTTPS request through the gateway, verified against the CA; TLS failures become `fail` outcomes. */
import { describeFailure, httpGet, isTlsFailure, type Reply } from './http.js';
import type { CheckContext, CheckOutcome } from './types.js';

export type Probe = { reply: Reply; url: string } | { failure: CheckOutcome };

export async function gatewayGet(ctx: CheckContext, path: string, headers: Record<string, string> = {}): Promise<Probe> {
  const url = `${ctx.urls.gatewayHttps}${path}`;
  try {
    return { reply: await httpGet(url, { dispatcher: ctx.https, headers, timeoutMs: 30_000 }), url };
  } catch (err) {
    const reason = describeFailure(err);
    if (isTlsFailure(err)) {
      return {
        failure: {
          status: 'fail',
          summary: 'the gateway certificate is not trusted by the CA',
          detail: `GET ${url}: ${reason} (CA: ${ctx.caPath})`,
          hint: 'Pass the CA that issued the gateway certificate with --ca, or reinstall the gateway certificate.',
        },
      };
    }
    return { failure: { status: 'fail', summary: 'the gateway does not answer', detail: `GET ${url}: ${reason}`, hint: 'Is the gateway running?' } };
  }
}

/** The negative checks: a request that must be refused with 401. */
export async function expect401(ctx: CheckContext, path: string, headers: Record<string, string>, what: string): Promise<CheckOutcome> {
  const probe = await gatewayGet(ctx, path, headers);
  if ('failure' in probe) return probe.failure;
  const { status } = probe.reply;
  const message = (probe.reply.body as { message?: string } | null)?.message;
  return {
    status: status === 401 ? 'pass' : 'fail',
    summary: status === 401 ? `401${message ? ` "${message}"` : ''}` : `${status}: ${what} was not refused`,
    detail: `GET ${probe.url}`,
    httpStatus: status,
    ...(status === 401 ? {} : { hint: 'Rerun `hospital-api install` to restore the gateway plugins.' }),
  };
}

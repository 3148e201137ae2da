/**
 * The access flow (spec §4.1 rule 2): the request's token goes unchanged as
 * the Authorization header to PLATFORM_API_URL + /validate-access. The token
 * is never logged, stored or put in an error message.
 */
import { request, type Agent } from 'undici';
import { HospitalApiError } from '../../errors/index.js';
import type { ApiConfig } from '../server/config.js';
import { classifyFailure, discard, makeAgent, readText, withDeadline } from '../fhir/upstream-http.js';

export interface PlatformClient {
  /** Resolves when access is granted. @throws ERR_API_ACCESS_DENIED, ERR_API_UPSTREAM_CREDENTIALS, ERR_API_PLATFORM_* */
  validateAccess(token: string, platformCareId: string): Promise<void>;
  /** Readiness: the platform answers HTTP at all (any status below 500). */
  /** Readiness, bounded by `timeoutMs` (default PLATFORM_TIMEOUT_MS). */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export function createPlatformClient(config: ApiConfig): PlatformClient {
  const agent: Agent = makeAgent(config.platformCa, config.platformTimeoutMs);
  const base = config.platformApiUrl.href.replace(/\/+$/, '');
  const ms = config.platformTimeoutMs;

  /** `signal`: the deadline of the request and its body, `ms` long (withDeadline, cleared once the body is read). */
  async function send(path: string, method: 'GET' | 'POST', headers: Record<string, string>, signal: AbortSignal, ms: number, body?: string) {
    try {
      return await request(`${base}${path}`, {
        dispatcher: agent,
        method,
        headers,
        body,
        signal,
      });
    } catch (err) {
      const f = classifyFailure(err);
      if (f.kind === 'timeout') throw new HospitalApiError('ERR_API_PLATFORM_TIMEOUT', { ms }, { cause: err });
      throw new HospitalApiError('ERR_API_PLATFORM_UNAVAILABLE', { detail: f.reason }, { cause: err });
    }
  }

  return {
    validateAccess: (token, platformCareId) => withDeadline(ms, (signal) => validate(token, platformCareId, signal)),
    ping: (timeoutMs = ms) =>
      withDeadline(timeoutMs, async (signal) => {
        const res = await send('/validate-access', 'GET', { accept: 'application/json' }, signal, timeoutMs);
        await discard(res.body);
        if (res.statusCode >= 500) {
          throw new HospitalApiError('ERR_API_PLATFORM_UNAVAILABLE', { detail: `answered ${res.statusCode}` });
        }
      }),
    close: () => agent.close(),
  };

  async function validate(token: string, platformCareId: string, signal: AbortSignal): Promise<void> {
    const method = config.platformValidateMethod;
    const headers: Record<string, string> = { authorization: token, accept: 'application/json' };
    // The POST body shape is not in the spec (§4.1 rule 3); we send the care id the token must match.
    let body: string | undefined;
    if (method === 'POST') {
      headers['content-type'] = 'application/json';
      body = JSON.stringify({ platformCareId });
    }
    const res = await send('/validate-access', method, headers, signal, ms, body);
    const status = res.statusCode;
    if (status === 401 || status === 403) {
      await discard(res.body);
      throw new HospitalApiError('ERR_API_ACCESS_DENIED', { detail: `validate-access answered ${status}` });
    }
    if (status >= 400 && status < 500) {
      await discard(res.body);
      throw new HospitalApiError('ERR_API_UPSTREAM_CREDENTIALS', { status });
    }
    if (status < 200 || status >= 300) {
      await discard(res.body);
      throw new HospitalApiError('ERR_API_PLATFORM_UNAVAILABLE', { detail: `validate-access answered ${status}` });
    }
    let text: string;
    try {
      text = await readText(res.body, 64 * 1024);
    } catch (err) {
      const f = classifyFailure(err);
      if (f.kind === 'timeout') throw new HospitalApiError('ERR_API_PLATFORM_TIMEOUT', { ms }, { cause: err });
      throw new HospitalApiError('ERR_API_PLATFORM_UNAVAILABLE', { detail: 'unreadable reply' }, { cause: err });
    }
    // A token granted for another patient must not open this one (the original health-tag deployment never checked).
    const granted = grantedCareId(text, res.headers['content-type']);
    if (granted !== undefined && granted !== platformCareId) {
      throw new HospitalApiError('ERR_API_ACCESS_DENIED', { detail: 'the token was granted for another platformCareId' });
    }
  }
}

/** The platformCareId of a JSON 2xx reply, if it names one. */
function grantedCareId(text: string, contentType: string | string[] | undefined): string | undefined {
  const type = Array.isArray(contentType) ? contentType[0] : contentType;
  if (!text || !type || !/json/i.test(type)) return undefined;
  try {
    const doc = JSON.parse(text) as { platformCareId?: unknown };
    if (doc && typeof doc === 'object' && 'platformCareId' in doc) return String(doc.platformCareId);
  } catch {
    return undefined;
  }
  return undefined;
}

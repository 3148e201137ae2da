/**
 * POSTs one Bundle to the FHIR base with undici and reads the outcome:
 * transaction-response / batch-response entries counted as created (201) or
 * kept (200: conditional create matched, or an update), and per-entry failures
 * of a batch (http://hl7.org/fhir/R4/http.html#transaction: batch failures show as entry statuses, not HTTP ones).
 */
import { errors as undiciErrors, type Dispatcher } from 'undici';
import { HospitalApiError } from '../../errors/index.js';

export interface PostResult {
  created: number;
  kept: number;
  failed: Array<{ index: number; status: string; detail: string; code?: string }>;
}

/** The server's error code (details.text of the first issue), if it sent one. */
export function outcomeCode(body: unknown): string | undefined {
  const issues = (body as Obj | undefined)?.issue;
  const text = Array.isArray(issues) ? ((issues[0] as Obj | undefined)?.details as Obj | undefined)?.text : undefined;
  return typeof text === 'string' ? text : undefined;
}

/** The server refused a dangling reference: say that a bulk load in any order needs the server's flag. */
export const REFERENCE_NOT_FOUND = 'ERR_FHIR_REFERENCE_NOT_FOUND';

type Obj = Record<string, unknown>;

/** The first diagnostics/details text of an OperationOutcome, shortened. */
export function outcomeText(body: unknown): string {
  const issues = (body as Obj | undefined)?.issue;
  if (Array.isArray(issues)) {
    const texts = issues
      .map((i) => (i as Obj).diagnostics ?? ((i as Obj).details as Obj | undefined)?.text)
      .filter((t): t is string => typeof t === 'string');
    if (texts.length > 0) return texts.join('; ').slice(0, 300);
  }
  return typeof body === 'string' ? body.slice(0, 300) : JSON.stringify(body ?? '').slice(0, 300);
}

/**
 * `bundle` may be already serialized JSON (the bench keeps client work out of the timing). `headers`
 * go with the request (an installation's credential for its FHIR port: never logged, never in an error).
 */
export async function postBundle(dispatcher: Dispatcher, base: URL, bundle: unknown, label: string, headers: Record<string, string> = {}): Promise<PostResult> {
  let res: Dispatcher.ResponseData;
  try {
    res = await dispatcher.request({
      origin: base.origin,
      path: base.pathname.replace(/\/+$/, '') || '/',
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/fhir+json', accept: 'application/fhir+json' },
      body: typeof bundle === 'string' ? bundle : JSON.stringify(bundle),
    });
  } catch (err) {
    const detail = err instanceof undiciErrors.UndiciError || err instanceof Error ? err.message : String(err);
    throw new HospitalApiError('ERR_FHIR_LOAD_UNREACHABLE', { url: base.href, detail }, { cause: err });
  }
  const text = await res.body.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: reported as text below
  }
  if (res.statusCode === 401) {
    // the docker runtime's FHIR door without (or with another installation's) token
    throw new HospitalApiError('ERR_FHIR_LOAD_UNAUTHORIZED', { url: base.href, detail: outcomeText(body) });
  }
  if (res.statusCode < 200 || res.statusCode >= 300) {
    if (outcomeCode(body) === REFERENCE_NOT_FOUND) {
      throw new HospitalApiError('ERR_FHIR_LOAD_NEEDS_BULK', { unit: label, detail: outcomeText(body) });
    }
    throw new HospitalApiError('ERR_FHIR_LOAD_REJECTED', { unit: label, status: res.statusCode, detail: outcomeText(body) });
  }
  const out: PostResult = { created: 0, kept: 0, failed: [] };
  const entries = (body as Obj)?.entry;
  if (!Array.isArray(entries)) {
    throw new HospitalApiError('ERR_FHIR_LOAD_REJECTED', { unit: label, status: res.statusCode, detail: 'the reply is not a transaction-response or batch-response Bundle' });
  }
  entries.forEach((e, index) => {
    const response = (e as Obj).response as Obj | undefined;
    const status = typeof response?.status === 'string' ? response.status : '';
    const code = Number.parseInt(status, 10);
    if (code === 201) out.created++;
    else if (code >= 200 && code < 300) out.kept++;
    else {
      const code = outcomeCode(response?.outcome);
      out.failed.push({ index, status, detail: outcomeText(response?.outcome), ...(code ? { code } : {}) });
    }
  });
  return out;
}

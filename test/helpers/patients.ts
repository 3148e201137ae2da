/**
 * The platform's call on a site: POST /api/patients with a care id and the token the platform
 * stand-in issued for it (src/demo/tokens.ts), as every tier's tests make it.
 */
import { request } from 'undici';

/** A record entry as the tests read it. */
export interface RecordEntry {
  resource: { resourceType: string; id: string; meta?: { versionId?: string }; identifier?: Array<{ system?: string; value?: string }> };
}

/** The API's answer: the record's entries on 200, its error otherwise. */
export interface PatientsBody {
  resources?: RecordEntry[];
  error?: { code: string; message?: string };
}

/** What postPatient gives back: the status, the body, and the entries (none unless 200). */
export interface PatientAnswer {
  status: number;
  body: PatientsBody;
  resources: RecordEntry[];
}

/**
 * POST /api/patients on the API listening on loopback at `apiPort`. A 200's body must be JSON
 * (a broken record fails the test here); another status's body is read as JSON when it is.
 * `timeoutMs` bounds the wait for the headers and for each body chunk (undici's defaults: 300 s).
 */
export async function postPatient(apiPort: number, careId: string, token: string, options: { timeoutMs?: number } = {}): Promise<PatientAnswer> {
  const res = await request(`http://127.0.0.1:${apiPort}/api/patients`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ platformCareId: careId, token }),
    ...(options.timeoutMs === undefined ? {} : { headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs }),
  });
  const text = await res.body.text();
  const body = res.statusCode === 200 ? (JSON.parse(text) as PatientsBody) : parsedOrEmpty(text);
  return { status: res.statusCode, body, resources: res.statusCode === 200 ? (body.resources ?? []) : [] };
}

function parsedOrEmpty(text: string): PatientsBody {
  try {
    return JSON.parse(text) as PatientsBody;
  } catch {
    return {};
  }
}

/** The token the platform stand-in issued for `careId`; fails the test, naming the care id, when there is none. */
export function tokenOf(tokens: ReadonlyArray<{ careId: string; token: string }>, careId: string): string {
  const found = tokens.find((t) => t.careId === careId);
  if (!found) throw new Error(`no token was issued for care id ${careId}`);
  return found.token;
}

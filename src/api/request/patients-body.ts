/**
 * The body of POST /api/patients: {"platformCareId": string, "token": string},
 * checked before anything goes upstream. The token becomes a header, so it is
 * printable ASCII and bounded; the care id has no control characters and is
 * well-formed Unicode: JSON may escape a lone surrogate (`"\ud800"`), a string
 * with no UTF-8 form, which no search URL can carry (encodeURIComponent throws
 * URIError; it was a 500 ERR_INTERNAL, issue 45).
 */
import { HospitalApiError } from '../../errors/index.js';

const MAX_CARE_ID = 256;
const MAX_TOKEN = 8192;

export interface PatientsBody {
  platformCareId: string;
  token: string;
}

/** @throws ERR_API_BAD_REQUEST naming what is wrong (never echoing the token) */
export function readPatientsBody(body: unknown): PatientsBody {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new HospitalApiError('ERR_API_BAD_REQUEST', { detail: 'body must be a JSON object' });
  }
  const { platformCareId, token } = body as Record<string, unknown>;
  if (typeof platformCareId !== 'string' || platformCareId.length === 0 || platformCareId.length > MAX_CARE_ID) {
    throw new HospitalApiError('ERR_API_BAD_REQUEST', { detail: `platformCareId must be a string of 1 to ${MAX_CARE_ID} characters` });
  }
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(platformCareId)) {
    throw new HospitalApiError('ERR_API_BAD_REQUEST', { detail: 'platformCareId holds control characters' });
  }
  // With the u flag a surrogate pair is one code point: only a lone surrogate matches.
  if (/\p{Surrogate}/u.test(platformCareId)) {
    throw new HospitalApiError('ERR_API_BAD_REQUEST', { detail: 'platformCareId is not well-formed Unicode (it holds a lone surrogate)' });
  }
  if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN || !/^[\x20-\x7e]+$/.test(token)) {
    throw new HospitalApiError('ERR_API_BAD_REQUEST', { detail: `token must be printable ASCII of 1 to ${MAX_TOKEN} characters` });
  }
  return { platformCareId, token };
}

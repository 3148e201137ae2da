/** What every interaction gets, whether it came over HTTP or from a Bundle entry. */
import type { FhirStore } from '../store/types.js';
import type { SqliteFhirStore } from '../store/sqlite-store.js';

export interface FhirContext {
  store: SqliteFhirStore & FhirStore;
  /** The public base, no trailing slash. */
  base: string;
}

export interface FhirRequest {
  method: string;
  /** Path below the base, split on `/`, no empty segments (e.g. ['Patient', '123']). */
  segments: string[];
  /** URL query pairs, in order (URL-decoded, FHIR escapes kept). */
  params: Array<[string, string]>;
  body?: unknown;
  ifMatch?: string;
  ifNoneExist?: string;
  /** `return=minimal|representation|OperationOutcome` from the Prefer header. */
  preferReturn?: string;
}

export interface FhirResponse {
  status: number;
  body?: unknown;
  location?: string;
  etag?: string;
  lastModified?: string;
}

export function etagOf(versionId: string): string {
  return `W/"${versionId}"`;
}

/** `W/"3"`, `"3"` or `3` → `3`. */
export function versionFromEtag(etag: string): string {
  return etag.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

export function httpDate(iso: string): string {
  return new Date(iso).toUTCString();
}

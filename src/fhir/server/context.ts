/** What every interaction gets, whether it came over HTTP or from a Bundle entry. */
import type { FhirStore } from '../store/types.js';
import type { SqliteFhirStore } from '../store/sqlite-store.js';
import type { EntryFinding } from './validation-thread.js';

/** Write rules set when the server starts. */
export interface WritePolicy {
  /** Check every written resource against the R4 StructureDefinitions (src/fhir/validation). */
  validate: boolean;
  /** Refuse a write whose relative references name a resource that does not exist (HAPI's default). */
  referentialIntegrity: boolean;
}

export const DEFAULT_POLICY: WritePolicy = { validate: true, referentialIntegrity: true };

export interface FhirContext {
  store: SqliteFhirStore & FhirStore;
  /** The public base, no trailing slash. */
  base: string;
  policy: WritePolicy;
  /**
   * Inside a transaction: resources written so far, whose references are checked once every entry is
   * written (entries may point at each other in any order). Absent: checked at each write.
   */
  deferredReferenceChecks?: Array<{ resource: import('../store/types.js').Resource; where: string }>;
  /**
   * A transaction's time limit (issue 45, time-slice.ts withDeadline): past `at` (Date.now), its checks and writes
   * stop and it is rolled back. Absent: none.
   */
  deadline?: { at: number; ms: number };
  /** Inside a Bundle: names the entry in validation messages. */
  entry?: string;
  /**
   * A transaction Bundle's entries validated elsewhere (validation-thread.ts): the first of `indices` whose
   * resource is invalid, with its findings; null when all are valid; undefined when they must be validated here.
   */
  validateEntries?: (indices: number[]) => Promise<EntryFinding | null | undefined>;
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
  /** The body already serialized to bytes (cached answers such as /metadata); sent instead of `body`. */
  raw?: Buffer;
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

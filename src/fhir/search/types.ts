/** A search as the search layer takes it (from a URL or a Bundle entry) and what it returns. */
import type { Resource } from '../store/types.js';

export interface SearchRequest {
  resourceType: string;
  /** The URL query as name/value pairs, in order, still URL-decoded but not FHIR-unescaped. */
  params: Array<[string, string]>;
}

export interface SearchResult {
  /** Matches of the page, in order. */
  matches: Resource[];
  /** `_include`/`_revinclude` results for this page (each once, none repeating a match). */
  included: Resource[];
  /** Opaque cursor for the next page, or null. */
  nextCursor: string | null;
  /** The number of all matches, when it was asked for (`_total=accurate`, `_summary=count`, `_count=0`). */
  total?: number;
  /** The parameters actually used (for link.self). */
  used: Array<[string, string]>;
}

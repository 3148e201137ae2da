/**
 * The FHIR store contract. The REST server, transactions and `$everything`
 * (src/fhir/everything) all go through this interface; the implementation is
 * `SqliteFhirStore` (./sqlite-store.ts), opened with `openFhirStore(dir)`.
 */
import type { Resource } from '@medplum/fhirtypes';

export type { Resource };

export interface ResourceRef {
  type: string;
  id: string;
}

/** What `read` returns: the current version, a deleted marker, or undefined when never stored. */
export type ReadResult =
  | { deleted: false; resource: Resource; versionId: string; lastUpdated: string }
  | { deleted: true; versionId: string; lastUpdated: string };

export interface CompartmentPageOptions {
  /** Only these resource types (absent or empty: all). */
  types?: string[];
  /** Only resources whose meta.lastUpdated is strictly after this instant (record time). */
  sinceIso?: string;
  /** The `nextKey` of the previous page; absent for the first page. */
  afterKey?: string;
  /** Page size (1..1000). */
  limit: number;
}

export interface Page {
  resources: Resource[];
  /** Opaque key for the next page, or null when this is the last page. */
  nextKey: string | null;
}

/** One write inside `transaction`; everything inside runs in one SQLite transaction. */
export interface WriteOptions {
  /** Update only when the current versionId equals this (If-Match); else ERR_FHIR_VERSION_CONFLICT (412). */
  ifMatchVersion?: string;
}

export interface WriteResult {
  resource: Resource;
  /** true when a new resource was created (201), false for an update (200). */
  created: boolean;
}

/** A parsed search: see src/fhir/search/query.ts for how the URL becomes one. */
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

export interface HistoryEntry {
  resource?: Resource;
  type: string;
  id: string;
  versionId: string;
  lastUpdated: string;
  deleted: boolean;
}

export interface FhirStore {
  read(type: string, id: string): ReadResult | undefined;
  /** One query per type; returns only resources found (not deleted), in no particular order. */
  readMany(refs: ResourceRef[]): Resource[];
  vread(type: string, id: string, versionId: string): HistoryEntry | undefined;
  history(type: string, id: string): HistoryEntry[];

  create(resource: Resource): WriteResult;
  /** Update (or update-as-create when the id is new). */
  update(resource: Resource, options?: WriteOptions): WriteResult;
  /** Marks the resource deleted; returns false when there was nothing to delete. */
  delete(type: string, id: string): boolean;

  search(request: SearchRequest): SearchResult;
  /** Ids of the (non-deleted) resources matching a conditional query (`identifier=S|1`), at most `limit`. */
  matchIds(type: string, query: string, limit?: number): string[];

  /**
   * The Patient compartment (HL7 R4 CompartmentDefinition, unmodified; the Patient itself is
   * included), ordered by a stable internal key (keyset paging).
   */
  compartmentPage(patientId: string, options: CompartmentPageOptions): Page;
  /** `Type/id` of every resource each given resource references (relative references only, deduplicated). */
  referencesFrom(resources: Resource[]): ResourceRef[];

  /** Runs `fn` in one SQLite transaction: all or nothing. A nested call is a savepoint inside the outer one. */
  transaction<T>(fn: () => T): T;
  close(): void;
}

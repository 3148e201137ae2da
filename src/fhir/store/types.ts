/**
 * The FHIR store contract. The REST server, transactions and `$everything`
 * (src/fhir/everything) all go through this interface; the implementation is
 * `SqliteFhirStore` (./sqlite-store.ts), opened with `openFhirStore(dir)`.
 * Searches are a layer above it (src/fhir/search), reading the store's tables
 * through the query primitives it also provides (search/source.ts).
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

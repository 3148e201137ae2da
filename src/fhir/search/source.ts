/**
 * What the search layer reads a store through: the ids of indexed search
 * parameters and cached prepared statements over the store's tables
 * (store/schema.ts). `SqliteFhirStore` provides them; the store knows
 * nothing of searches.
 */
import type { Statement } from '../store/sqlite.js';

export interface SearchSource {
  indexer: {
    /** The index id of a type's parameter; with lookupOnly, undefined when it was never indexed. */
    pid(type: string, code: string, lookupOnly?: boolean): number | undefined;
  };
  /** A prepared statement over the store's tables, cached by its SQL. */
  prepare(sql: string): Statement;
  /** Like prepare, for statements read by their first column alone (columnAll, columnGet). */
  column(sql: string): Statement;
}

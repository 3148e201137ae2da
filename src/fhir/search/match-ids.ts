/**
 * Conditional queries (ifNoneExist, conditional update/delete and
 * references): the ids of the current resources matching `identifier=S|1&…`,
 * read from the index alone when one indexed condition decides.
 */
import { HospitalApiError } from '../../errors/index.js';
import { columnAll } from '../store/sqlite.js';
import { and } from './conditions.js';
import { limitClause } from './execute.js';
import { plan } from './plan.js';
import { parseQueryString } from './query-string.js';
import type { SearchSource } from './source.js';

/** Ids of resources of `type` matching a conditional query string (`identifier=S|1&…`). */
export function matchIds(store: SearchSource, type: string, query: string, limit = 2): string[] {
  const params = parseQueryString(query, false).filter(([k]) => !k.startsWith('_') || k === '_id' || k === '_lastUpdated');
  if (params.length === 0) throw new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `conditional query "${query}" has no search parameters` });
  const p = plan(store, { resourceType: type, params }, true);
  // a condition made only of unknown parameters would match everything: refuse it
  if (p.used.length === 0) {
    throw new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `conditional query "${query}" names no known search parameter of ${type}` });
  }
  // ids only: no content read or parsed (this runs for every ifNoneExist and conditional reference);
  // the limit written in, not bound, so the cached statement is not prepared again on each run (execute.ts limitClause)
  const only = p.where.length === 1 ? p.where[0]?.rids : undefined;
  if (only) {
    // one index condition: index rows exist only for current, non-deleted resources of this type
    // (pid is per type), so the index alone answers; most ingest lookups find nothing and stop here
    const rids = columnAll<number>(store.column(`${only.sql} ORDER BY rid${limitClause(limit)}`), ...only.args);
    if (rids.length === 0) return [];
    return columnAll<string>(store.column(`SELECT id FROM resource WHERE rid IN (${rids.map(() => '?').join(',')}) ORDER BY rid`), ...rids);
  }
  const w = and([{ sql: 'r.type = ? AND r.deleted = 0', args: [type] }, ...p.where]);
  return columnAll<string>(store.column(`SELECT r.id FROM resource r WHERE ${w.sql} ORDER BY r.rid${limitClause(limit)}`), ...w.args);
}

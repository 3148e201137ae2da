/**
 * Runs a search against the SQLite store: filters (conditions.ts), `_sort`,
 * keyset paging (never OFFSET: measured here, OFFSET was 20–670× slower
 * at depth) and one level of `_include`/`_revinclude`.
 */
import { HospitalApiError } from '../../errors/index.js';
import type { SqliteFhirStore } from '../store/sqlite-store.js';
import { columnAll, columnGet } from '../store/sqlite.js';
import type { Resource, SearchRequest, SearchResult } from '../store/types.js';
import { and, idCondition, lastUpdatedCondition, paramCondition, type Sql } from './conditions.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { paramDef } from './params.js';
import { includes } from './include.js';
import { sortKeys, type SortKey } from './sort.js';

export const DEFAULT_COUNT = 20;
export const MAX_COUNT = 1000;
/** Parameters that shape the result rather than filter it; ignored when unknown to search. */
const IGNORED = new Set(['_format', '_pretty', '_elements', '_contained', '_containedType']);

interface Plan {
  where: Sql[];
  count: number;
  sort: SortKey[];
  include: string[];
  revinclude: string[];
  cursor: string | undefined;
  /** `_total=accurate`, `_summary=count` or `_count=0`: run a count query. */
  countTotal: boolean;
  used: Array<[string, string]>;
}

function plan(store: SqliteFhirStore, request: SearchRequest, lookupOnly: boolean): Plan | undefined {
  const type = request.resourceType;
  const p: Plan = { where: [], count: DEFAULT_COUNT, sort: [], include: [], revinclude: [], cursor: undefined, countTotal: false, used: [] };
  let sortSpec: string | undefined;
  for (const [fullName, value] of request.params) {
    const [name, modifier] = fullName.split(':', 2) as [string, string | undefined];
    if (name === '_cursor') {
      p.cursor = value;
      continue;
    }
    if (IGNORED.has(name)) continue;
    if (name === '_total' || name === '_summary') {
      if (value === 'accurate' || value === 'count') p.countTotal = true;
      if (value === 'count') p.count = 0;
      if (name === '_summary' && value !== 'count') continue; // other summaries return full resources
      p.used.push([fullName, value]);
      continue;
    }
    if (name === '_count') {
      const n = Number(value);
      if (!/^\d+$/.test(value)) throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name, detail: 'must be a non-negative integer' });
      p.count = Math.min(n, MAX_COUNT);
    } else if (name === '_sort') sortSpec = value;
    else if (name === '_include') p.include.push(value);
    else if (name === '_revinclude') p.revinclude.push(value);
    else if (name === '_id') p.where.push(idCondition(name, value, modifier));
    else if (name === '_lastUpdated') p.where.push(lastUpdatedCondition(name, value));
    else {
      const def = paramDef(type, name);
      if (!def) continue; // unknown parameters are ignored (R4 lenient handling) and left out of link.self
      const pid = store.indexer.pid(type, name, lookupOnly);
      // the value is checked even when the parameter was never indexed (an empty or malformed value is a 400 either way)
      if (pid === undefined) paramCondition(def, -1, name, modifier, value);
      // a parameter never indexed matches nothing (or everything with :missing=true / :not)
      p.where.push(pid === undefined ? (modifier === 'not' || (modifier === 'missing' && value === 'true') ? { sql: '1', args: [] } : { sql: '0', args: [] }) : paramCondition(def, pid, name, modifier, value));
    }
    p.used.push([fullName, value]);
  }
  if (sortSpec !== undefined) p.sort = sortKeys(store, type, sortSpec);
  return p;
}

export function executeSearch(store: SqliteFhirStore, request: SearchRequest): SearchResult {
  const p = plan(store, request, true) as Plan;
  const type = request.resourceType;
  const where: Sql[] = [{ sql: 'r.type = ? AND r.deleted = 0', args: [type] }, ...p.where];
  const select = ['r.rid', 'r.content', ...p.sort.map((k, i) => `${k.expr} AS s${i}`)];
  const sortArgs = p.sort.flatMap((k) => k.args);
  const order = [...p.sort.map((k, i) => `s${i} ${k.desc ? 'DESC' : 'ASC'}`), 'rid ASC'].join(', ');
  const after: Sql[] = [];
  if (p.cursor !== undefined) after.push(keyset(p.sort, decodeCursor(p.cursor, p.sort.length)));
  const w = and(where);
  const inner = `SELECT ${select.join(', ')} FROM resource r WHERE ${w.sql}`;
  const outerWhere = after.length ? ` WHERE ${and(after).sql}` : '';
  const sql = `SELECT * FROM (${inner})${outerWhere} ORDER BY ${order} LIMIT ?`;
  const rows = p.count === 0 ? [] : (store.prepare(sql).all(...sortArgs, ...w.args, ...after.flatMap((a) => a.args), p.count + 1) as Array<Record<string, unknown>>);
  const more = rows.length > p.count;
  const page = more ? rows.slice(0, p.count) : rows;
  const matches = page.map((r) => JSON.parse(r.content as string) as Resource);
  const last = page[page.length - 1];
  const nextCursor = more && last ? encodeCursor([...p.sort.map((_, i) => last[`s${i}`]), last.rid]) : null;
  const included = includes(store, type, page.map((r) => r.rid as number), matches, p.include, p.revinclude);
  const result: SearchResult = { matches, included, nextCursor, used: p.used };
  if (p.countTotal || p.count === 0) {
    result.total = columnGet<number>(store.column(`SELECT count(*) FROM resource r WHERE ${w.sql}`), ...w.args) as number;
  }
  return result;
}

/** Rows strictly after the cursor in (s0 dir0, s1 dir1, …, rid ASC) order. */
function keyset(sort: SortKey[], values: Array<string | number | null>): Sql {
  const cols = [...sort.map((k, i) => ({ col: `s${i}`, desc: k.desc })), { col: 'rid', desc: false }];
  const ors: Sql[] = [];
  for (let i = 0; i < cols.length; i++) {
    const parts: Sql[] = [];
    for (let j = 0; j < i; j++) parts.push({ sql: `${cols[j]!.col} = ?`, args: [values[j]!] });
    parts.push({ sql: `${cols[i]!.col} ${cols[i]!.desc ? '<' : '>'} ?`, args: [values[i]!] });
    ors.push(and(parts));
  }
  return { sql: ors.map((o) => `(${o.sql})`).join(' OR '), args: ors.flatMap((o) => o.args) };
}

/** Ids of resources of `type` matching a conditional query string (`identifier=S|1&…`). */
export function matchIds(store: SqliteFhirStore, type: string, query: string, limit: number): string[] {
  const params = [...new URLSearchParams(query.replace(/\+/g, '%2B'))].filter(([k]) => !k.startsWith('_') || k === '_id' || k === '_lastUpdated');
  if (params.length === 0) throw new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `conditional query "${query}" has no search parameters` });
  const p = plan(store, { resourceType: type, params }, true) as Plan;
  // a condition made only of unknown parameters would match everything: refuse it
  if (p.used.length === 0) {
    throw new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `conditional query "${query}" names no known search parameter of ${type}` });
  }
  // ids only: no content read or parsed (this runs for every ifNoneExist and conditional reference)
  const only = p.where.length === 1 ? p.where[0]?.rids : undefined;
  if (only) {
    // one index condition: index rows exist only for current, non-deleted resources of this type
    // (pid is per type), so the index alone answers; most ingest lookups find nothing and stop here
    const rids = columnAll<number>(store.column(`${only.sql} ORDER BY rid LIMIT ?`), ...only.args, limit);
    if (rids.length === 0) return [];
    return columnAll<string>(store.column(`SELECT id FROM resource WHERE rid IN (${rids.map(() => '?').join(',')}) ORDER BY rid`), ...rids);
  }
  const w = and([{ sql: 'r.type = ? AND r.deleted = 0', args: [type] }, ...p.where]);
  return columnAll<string>(store.column(`SELECT r.id FROM resource r WHERE ${w.sql} ORDER BY r.rid LIMIT ?`), ...w.args, limit);
}

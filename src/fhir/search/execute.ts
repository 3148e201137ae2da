/**
 * Runs a search against the store's tables (search/source.ts): filters
 * (plan.ts, conditions.ts), `_sort`, keyset paging (never OFFSET: measured
 * here, OFFSET was 20–670× slower at depth) and one level of
 * `_include`/`_revinclude`.
 */
import { columnAll, columnGet } from '../store/sqlite.js';
import { parseStored } from '../store/stored-json.js';
import type { Resource } from '../store/types.js';
import { and, type Sql } from './conditions.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { includes } from './include.js';
import { plan, type Plan } from './plan.js';
import type { SortKey } from './sort.js';
import type { SearchSource } from './source.js';
import type { SearchRequest, SearchResult } from './types.js';

/** One page of a search: matches in order, their includes, the next cursor and, when asked, the total. */
export function search(store: SearchSource, request: SearchRequest): SearchResult {
  const p = plan(store, request, true);
  const type = request.resourceType;
  const only = p.sort.length === 0 && p.cursor === undefined && p.where.length === 1 ? p.where[0]?.rids : undefined;
  // the filters on the resource row, for the general query and the count
  const filters = (): Sql => and([{ sql: 'r.type = ? AND r.deleted = 0', args: [type] }, ...p.where]);
  const rows =
    p.count === 0 ? []
    : only ? byIndex(store, only, p.count + 1)
    : general(store, p, filters());
  const more = rows.length > p.count;
  const page = more ? rows.slice(0, p.count) : rows;
  const matches = page.map((r) => parseStored<Resource>(r.content as string));
  const last = page[page.length - 1];
  const nextCursor = more && last ? encodeCursor([...p.sort.map((_, i) => last[`s${i}`]), last.rid]) : null;
  const included = includes(store, type, page.map((r) => r.rid as number), matches, p.include, p.revinclude);
  const result: SearchResult = { matches, included, nextCursor, used: p.used };
  if (p.countTotal || p.count === 0) {
    const w = filters();
    result.total = columnGet<number>(store.column(`SELECT count(*) FROM resource r WHERE ${w.sql}`), ...w.args) as number;
  }
  return result;
}

/**
 * A page of any search: the filters, `_sort` and the cursor's keyset as one query (built only here: the first page
 * of a one-condition search, the API's identifier lookup, never needs it, issue 49).
 */
function general(store: SearchSource, p: Plan, w: Sql): Array<Record<string, unknown>> {
  const select = ['r.rid', 'r.content', ...p.sort.map((k, i) => `${k.expr} AS s${i}`)];
  const sortArgs = p.sort.flatMap((k) => k.args);
  const order = [...p.sort.map((k, i) => `s${i} ${k.desc ? 'DESC' : 'ASC'}`), 'rid ASC'].join(', ');
  const after: Sql[] = [];
  if (p.cursor !== undefined) after.push(keyset(p.sort, decodeCursor(p.cursor, p.sort.length)));
  const inner = `SELECT ${select.join(', ')} FROM resource r WHERE ${w.sql}`;
  const outerWhere = after.length ? ` WHERE ${and(after).sql}` : '';
  const sql = `SELECT * FROM (${inner})${outerWhere} ORDER BY ${order}${limitClause(p.count + 1)}`;
  return store.prepare(sql).all(...sortArgs, ...w.args, ...after.flatMap((a) => a.args)) as Array<Record<string, unknown>>;
}

/**
 * The first page of a search with one index condition and no `_sort` (`Patient?identifier=S|V`, the API's
 * lookup): the matching rids from the index first, then their rows by primary key, in rid order as the
 * general query gives them (issue 49: SQLite ran the general form, `r.rid IN (subquery)` on the resource
 * table, at about twice the cost of the two seeks). Index rows exist only for current, non-deleted resources
 * of the parameter's type (its pid is per type), as match-ids.ts relies on too, so the rows are the same.
 */
function byIndex(store: SearchSource, rids: Sql, limit: number): Array<Record<string, unknown>> {
  const found = columnAll<number>(store.column(`${rids.sql.replace(/^SELECT rid /, 'SELECT DISTINCT rid ')} ORDER BY rid${limitClause(limit)}`), ...rids.args);
  if (found.length === 0) return [];
  return store.prepare(`SELECT rid, content FROM resource WHERE rid IN (${found.map(() => '?').join(',')}) ORDER BY rid`).all(...found) as Array<Record<string, unknown>>;
}

/**
 * ` LIMIT n` written into the statement's text rather than bound (issue 49). SQLite reads a bound LIMIT's value
 * when it plans the statement (src/expr.c, sqlite3ExprIsInteger, case TK_VARIABLE: it marks the parameter in the
 * statement's expmask), and binding a marked parameter anew expires the statement (src/vdbeapi.c, vdbeUnbind), so
 * each run prepared it again, as https://www.sqlite.org/c3ref/prepare.html says of values that "might influence
 * the choice of query plan". Measured here (SQLite 3.53, node:sqlite): the identifier lookup's rid query took
 * 5.4–6.3 µs with `LIMIT ?` and 3.0–3.5 µs with the number written in, the same as with no LIMIT at all. `n` is
 * this module's own count (a page size + 1: at most MAX_COUNT + 1), never input text, so the cached statements
 * stay few.
 */
export function limitClause(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`a row limit must be a whole number, not ${n}`);
  return ` LIMIT ${n}`;
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

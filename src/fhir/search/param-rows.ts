/**
 * Which index rows are a search parameter's: those under its own parameter id, and, for a reference parameter
 * that narrows another (ParamDef.narrows, e.g. Observation `patient` = `subject` pointing at a Patient), also
 * the other parameter's rows with the narrowed target type, which the index keeps only once (store/indexer.ts).
 * Written as `pid IN (a, b)` so a lookup by value stays an index seek per parameter id.
 */
import type { ParamDef } from '../definitions/search-params.js';
import type { Sql } from './conditions.js';
import type { SearchSource } from './source.js';

/**
 * The SQL condition selecting the parameter's rows (columns prefixed with `alias`, e.g. `x.`), or undefined when
 * nothing was ever indexed for it (with `lookupOnly`; otherwise its parameter ids are created).
 */
export function paramRows(store: SearchSource, type: string, def: ParamDef, lookupOnly: boolean, alias = ''): Sql | undefined {
  const pid = store.indexer.pid(type, def.code, lookupOnly);
  if (!def.narrows) return pid === undefined ? undefined : { sql: `${alias}pid = ?`, args: [pid] };
  const base = store.indexer.pid(type, def.narrows.code, lookupOnly);
  if (pid === undefined && base === undefined) return undefined;
  return {
    sql: `${alias}pid IN (?, ?) AND (${alias}pid = ? OR ${alias}target_type = ?)`,
    args: [pid ?? -1, base ?? -1, pid ?? -1, def.narrows.targetType],
  };
}

/**
 * Which index rows are a search parameter's: those under its own parameter id, and, for a parameter whose rows
 * include another's (ParamDef.shares: `combo-code` and `code`; Observation `patient` and the rows of `subject`
 * pointing at a Patient), also those of the other, which the index keeps only once (store/indexer.ts).
 * Written as `pid IN (a, b, …)` so a lookup by value stays an index seek per parameter id.
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
  if (!def.shares) return pid === undefined ? undefined : { sql: `${alias}pid = ?`, args: [pid] };
  const bases = def.shares.map((s) => ({ pid: store.indexer.pid(type, s.code, lookupOnly), targetType: s.targetType }));
  if (pid === undefined && bases.every((b) => b.pid === undefined)) return undefined;
  const pids = [pid ?? -1, ...bases.map((b) => b.pid ?? -1)];
  const sql = `${alias}pid IN (${pids.map(() => '?').join(', ')})`;
  const narrowed = bases.filter((b) => b.targetType !== undefined);
  if (narrowed.length === 0) return { sql, args: pids };
  // a narrowed parameter's rows count with their target type only; the others' whole
  const whole = [pid ?? -1, ...bases.filter((b) => b.targetType === undefined).map((b) => b.pid ?? -1)];
  const filter = [`${alias}pid IN (${whole.map(() => '?').join(', ')})`, ...narrowed.map(() => `(${alias}pid = ? AND ${alias}target_type = ?)`)];
  return { sql: `${sql} AND (${filter.join(' OR ')})`, args: [...pids, ...whole, ...narrowed.flatMap((b) => [b.pid ?? -1, b.targetType as string])] };
}

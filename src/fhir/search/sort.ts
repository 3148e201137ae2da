/**
 * `_sort`: `_id`, `_lastUpdated` and any indexed parameter (its smallest
 * indexed value; resources without one sort last ascending). `-name` is descending.
 */
import { HospitalApiError } from '../../errors/index.js';
import type { SqlValue } from '../store/sqlite.js';
import { paramDef } from '../definitions/search-params.js';
import { paramRows } from './param-rows.js';
import type { SearchSource } from './source.js';

export interface SortKey {
  expr: string;
  args: SqlValue[];
  desc: boolean;
}

const COLUMN: Record<string, [table: string, column: string, missing: string]> = {
  token: ['sp_token', 'value', "'\uffff'"],
  uri: ['sp_token', 'value', "'\uffff'"],
  string: ['sp_string', 'value', "'\uffff'"],
  reference: ['sp_ref', 'target_id', "'\uffff'"],
  date: ['sp_date', 'lo', '9e15'],
  number: ['sp_number', 'value', '9e300'],
};

export function sortKeys(store: SearchSource, type: string, spec: string): SortKey[] {
  return spec
    .split(',')
    .filter(Boolean)
    .map((raw) => {
      const desc = raw.startsWith('-');
      const name = desc ? raw.slice(1) : raw;
      if (name === '_id') return { expr: 'r.id', args: [], desc };
      if (name === '_lastUpdated') return { expr: 'r.last_updated', args: [], desc };
      const def = paramDef(type, name);
      if (!def) throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name: '_sort', detail: `${type} has no search parameter "${name}"` });
      const [table, column, missing] = COLUMN[def.type] as [string, string, string];
      const rows = paramRows(store, type, def, true, 'x.') ?? { sql: 'x.pid = ?', args: [-1] };
      return { expr: `COALESCE((SELECT MIN(${column}) FROM ${table} x WHERE x.rid = r.rid AND ${rows.sql}), ${missing})`, args: rows.args, desc };
    });
}

/**
 * `_include` and `_revinclude`, one level (no :iterate): `Type:param[:Target]` or `*`.
 * Results leave out anything already among the matches and appear once each.
 */
import { HospitalApiError } from '../../errors/index.js';
import { columnAll } from '../store/sqlite.js';
import type { Resource } from '../store/types.js';
import { paramDef, paramsFor } from '../definitions/search-params.js';
import type { Sql } from './conditions.js';
import { paramRows } from './param-rows.js';
import type { SearchSource } from './source.js';
import { parseStored } from '../store/stored-json.js';

function parseSpec(spec: string): { source: string; code: string; target: string | undefined } {
  const [source, code, target] = spec.split(':');
  if (!source || !code) throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name: '_include', detail: `"${spec}" is not Type:parameter[:Target]` });
  return { source, code, target };
}

/** The conditions selecting the sp_ref rows (alias x) of each reference parameter named (param-rows.ts). */
function refRows(store: SearchSource, source: string, code: string): Sql[] {
  const codes = code === '*' ? [...paramsFor(source).values()].filter((d) => d.type === 'reference').map((d) => d.code) : [code];
  const out: Sql[] = [];
  for (const c of codes) {
    const def = paramDef(source, c);
    if (def?.type !== 'reference') {
      throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name: '_include', detail: `${source}:${c} is not a reference parameter` });
    }
    const rows = paramRows(store, source, def, true, 'x.');
    if (rows !== undefined) out.push(rows);
  }
  return out;
}

export function includes(store: SearchSource, type: string, rids: number[], matches: Resource[], include: string[], revinclude: string[]): Resource[] {
  if (rids.length === 0 || (include.length === 0 && revinclude.length === 0)) return [];
  const seen = new Set(matches.map((m) => `${m.resourceType}/${m.id}`));
  const out: Resource[] = [];
  const add = (rows: string[]): void => {
    for (const c of rows) {
      const r = parseStored<Resource>(c);
      const k = `${r.resourceType}/${r.id}`;
      if (!seen.has(k)) {
        seen.add(k);
        out.push(r);
      }
    }
  };
  const ridList = rids.join(',');
  for (const spec of include) {
    const { source, code, target } = parseSpec(spec);
    if (source !== type) continue;
    for (const rows of refRows(store, source, code)) {
      const sql = `SELECT t.content FROM sp_ref x JOIN resource t ON t.type = x.target_type AND t.id = x.target_id
        WHERE ${rows.sql} AND x.rid IN (${ridList}) AND t.deleted = 0${target ? ' AND x.target_type = ?' : ''}`;
      add(columnAll<string>(store.column(sql), ...rows.args, ...(target ? [target] : [])));
    }
  }
  const ids = matches.map((m) => m.id as string);
  for (const spec of revinclude) {
    const { source, code, target } = parseSpec(spec);
    if (target && target !== type) continue;
    for (const rows of refRows(store, source, code)) {
      const sql = `SELECT r.content FROM sp_ref x JOIN resource r ON r.rid = x.rid
        WHERE ${rows.sql} AND x.target_type = ? AND x.target_id IN (${ids.map(() => '?').join(',')}) AND r.deleted = 0`;
      add(columnAll<string>(store.column(sql), ...rows.args, type, ...ids));
    }
  }
  return out;
}

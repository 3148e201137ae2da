/**
 * A search's plan: the URL parameters of a search or conditional query read
 * into SQL conditions (conditions.ts), `_count`, `_sort`, `_include`/
 * `_revinclude`, the paging cursor and whether to count all matches.
 */
import { HospitalApiError } from '../../errors/index.js';
import { idCondition, lastUpdatedCondition, paramCondition, type Sql } from './conditions.js';
import { paramDef } from '../definitions/search-params.js';
import { paramRows } from './param-rows.js';
import { sortKeys, type SortKey } from './sort.js';
import type { SearchSource } from './source.js';
import type { SearchRequest } from './types.js';

const DEFAULT_COUNT = 20;
const MAX_COUNT = 1000;
/** Parameters that shape the result rather than filter it; ignored when unknown to search. */
const IGNORED = new Set(['_format', '_pretty', '_elements', '_contained', '_containedType']);

export interface Plan {
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

export function plan(store: SearchSource, request: SearchRequest, lookupOnly: boolean): Plan {
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
      const rows = paramRows(store, type, def, lookupOnly);
      // the value is checked even when the parameter was never indexed (an empty or malformed value is a 400 either way)
      if (rows === undefined) paramCondition(def, { sql: 'pid = ?', args: [-1] }, name, modifier, value);
      // a parameter never indexed matches nothing (or everything with :missing=true / :not)
      p.where.push(rows === undefined ? (modifier === 'not' || (modifier === 'missing' && value === 'true') ? { sql: '1', args: [] } : { sql: '0', args: [] }) : paramCondition(def, rows, name, modifier, value));
    }
    p.used.push([fullName, value]);
  }
  if (sortSpec !== undefined) p.sort = sortKeys(store, type, sortSpec);
  return p;
}

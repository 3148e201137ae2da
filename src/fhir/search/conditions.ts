/**
 * One search parameter (name[:modifier]=v1,v2…) → one SQL condition on `r`
 * (the resource row). Each index lookup is `r.rid IN (SELECT rid FROM sp_x
 * WHERE pid = ? AND …)`, an index seek on (pid, value…).
 */
import type { SqlValue } from '../store/sqlite.js';
import { HospitalApiError } from '../../errors/index.js';
import { normalizeString, parseReference } from '../store/index-rows.js';
import { dateRange } from '../definitions/dates.js';
import { parseToken, splitEscaped, unescapeValue } from './escape.js';
import type { ParamDef } from '../definitions/search-params.js';

export interface Sql {
  sql: string;
  args: SqlValue[];
  /** For `r.rid IN (subquery)` conditions: the subquery alone (it yields rids of current resources only). */
  rids?: Sql;
}

const PREFIXES = ['eq', 'ne', 'gt', 'lt', 'ge', 'le', 'sa', 'eb', 'ap'] as const;
type Prefix = (typeof PREFIXES)[number];

function bad(name: string, detail: string): HospitalApiError {
  return new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name, detail });
}

function prefixed(raw: string): [Prefix, string] {
  const p = raw.slice(0, 2) as Prefix;
  return PREFIXES.includes(p) && /^[a-z]{2}[-+\d]/.test(raw) ? [p, raw.slice(2)] : ['eq', raw];
}

/** Upper bound for a prefix range scan: every string starting with `s` sorts below it. */
const after = (s: string): string => `${s}\uffff`;

/** Condition for `_lastUpdated` on the resource row itself. */
export function lastUpdatedCondition(name: string, value: string): Sql {
  const ors = splitEscaped(value, ',', name).map((v) => {
    const [prefix, rest] = prefixed(unescapeValue(v));
    const range = dateRange(rest);
    if (!range) throw bad(name, `"${rest}" is not a FHIR date`);
    const lo = new Date(range[0]).toISOString();
    const hi = new Date(range[1]).toISOString();
    const ops: Record<Prefix, Sql> = {
      eq: { sql: 'r.last_updated >= ? AND r.last_updated < ?', args: [lo, hi] },
      ap: { sql: 'r.last_updated >= ? AND r.last_updated < ?', args: [lo, hi] },
      ne: { sql: 'NOT (r.last_updated >= ? AND r.last_updated < ?)', args: [lo, hi] },
      gt: { sql: 'r.last_updated >= ?', args: [hi] },
      sa: { sql: 'r.last_updated >= ?', args: [hi] },
      ge: { sql: 'r.last_updated >= ?', args: [lo] },
      lt: { sql: 'r.last_updated < ?', args: [lo] },
      eb: { sql: 'r.last_updated < ?', args: [lo] },
      le: { sql: 'r.last_updated < ?', args: [hi] },
    };
    return ops[prefix];
  });
  return or(ors);
}

export function idCondition(name: string, value: string, modifier: string | undefined): Sql {
  const ids = splitEscaped(value, ',', name).map(unescapeValue);
  const sql = `r.id ${modifier === 'not' ? 'NOT ' : ''}IN (${ids.map(() => '?').join(',')})`;
  return { sql, args: ids };
}

const TABLE: Record<ParamDef['type'], string> = {
  token: 'sp_token', uri: 'sp_token', string: 'sp_string', reference: 'sp_ref', date: 'sp_date', number: 'sp_number',
};

/** `rows`: the condition selecting the parameter's index rows (param-rows.ts). */
export function paramCondition(def: ParamDef, rows: Sql, name: string, modifier: string | undefined, value: string): Sql {
  const table = TABLE[def.type];
  if (modifier === 'missing') {
    if (value !== 'true' && value !== 'false') throw bad(name, ':missing takes true or false');
    return { sql: `r.rid ${value === 'true' ? 'NOT ' : ''}IN (SELECT rid FROM ${table} WHERE ${rows.sql})`, args: rows.args };
  }
  const alternatives = splitEscaped(value, ',', name).map((v) => valueCondition(def, name, modifier, v));
  const inner = or(alternatives);
  const negate = modifier === 'not';
  const rids = { sql: `SELECT rid FROM ${table} WHERE ${rows.sql} AND (${inner.sql})`, args: [...rows.args, ...inner.args] };
  return { sql: `r.rid ${negate ? 'NOT ' : ''}IN (${rids.sql})`, args: rids.args, ...(negate ? {} : { rids }) };
}

function valueCondition(def: ParamDef, name: string, modifier: string | undefined, raw: string): Sql {
  switch (def.type) {
    case 'token': {
      if (modifier && modifier !== 'not') throw bad(name, `modifier :${modifier} is not supported on tokens`);
      const { system, code } = parseToken(raw, name);
      const parts: Sql[] = [];
      if (code !== undefined) parts.push({ sql: 'value = ?', args: [code] });
      if (system === null) parts.push({ sql: "system = ''", args: [] });
      else if (system !== undefined) parts.push({ sql: 'system = ?', args: [system] });
      if (parts.length === 0) throw bad(name, 'empty token');
      return and(parts);
    }
    case 'uri': {
      const v = unescapeValue(raw);
      if (modifier === 'below') return { sql: 'value >= ? AND value < ?', args: [v, after(v)] };
      if (modifier) throw bad(name, `modifier :${modifier} is not supported on uri`);
      return { sql: 'value = ?', args: [v] };
    }
    case 'string': {
      const v = normalizeString(unescapeValue(raw));
      if (modifier === 'exact') return { sql: 'value = ?', args: [v] };
      if (modifier === 'contains') return { sql: "value LIKE ? ESCAPE '\\'", args: [`%${v.replace(/[\\%_]/g, (c) => `\\${c}`)}%`] };
      if (modifier) throw bad(name, `modifier :${modifier} is not supported on strings`);
      return { sql: 'value >= ? AND value < ?', args: [v, after(v)] };
    }
    case 'reference': {
      const v = unescapeValue(raw);
      if (modifier && !/^[A-Z][A-Za-z]+$/.test(modifier)) throw bad(name, `modifier :${modifier} is not supported on references`);
      const parsed = parseReference(v);
      if (parsed) return { sql: 'target_id = ? AND target_type = ?', args: [parsed[1], parsed[0]] };
      if (modifier) return { sql: 'target_id = ? AND target_type = ?', args: [v, modifier] };
      return { sql: 'target_id = ?', args: [v] };
    }
    case 'date': {
      if (modifier) throw bad(name, `modifier :${modifier} is not supported on dates`);
      const [prefix, rest] = prefixed(unescapeValue(raw));
      const range = dateRange(rest);
      if (!range) throw bad(name, `"${rest}" is not a FHIR date`);
      const [lo, hi] = range;
      const ops: Record<Prefix, Sql> = {
        eq: { sql: 'lo >= ? AND hi <= ?', args: [lo, hi] },
        ne: { sql: 'NOT (lo >= ? AND hi <= ?)', args: [lo, hi] },
        gt: { sql: 'hi > ?', args: [hi] },
        lt: { sql: 'lo < ?', args: [lo] },
        ge: { sql: 'hi > ?', args: [lo] },
        le: { sql: 'lo < ?', args: [hi] },
        sa: { sql: 'lo >= ?', args: [hi] },
        eb: { sql: 'hi <= ?', args: [lo] },
        ap: { sql: 'lo < ? AND hi > ?', args: [hi, lo] },
      };
      return ops[prefix];
    }
    case 'number': {
      if (modifier) throw bad(name, `modifier :${modifier} is not supported on numbers`);
      const [prefix, rest] = prefixed(unescapeValue(raw));
      const n = Number(rest);
      if (rest.trim() === '' || !Number.isFinite(n)) throw bad(name, `"${rest}" is not a number`);
      // the precision of the value given sets the range of eq (R4 search: 100 means [99.5, 100.5))
      const decimals = rest.includes('.') ? rest.split('.')[1]!.replace(/e.*$/i, '').length : 0;
      const half = 0.5 * 10 ** -decimals;
      const ops: Record<Prefix, Sql> = {
        eq: { sql: 'value >= ? AND value < ?', args: [n - half, n + half] },
        ap: { sql: 'value >= ? AND value <= ?', args: [n * 0.9, n * 1.1] },
        ne: { sql: 'NOT (value >= ? AND value < ?)', args: [n - half, n + half] },
        gt: { sql: 'value > ?', args: [n] },
        sa: { sql: 'value > ?', args: [n] },
        lt: { sql: 'value < ?', args: [n] },
        eb: { sql: 'value < ?', args: [n] },
        ge: { sql: 'value >= ?', args: [n] },
        le: { sql: 'value <= ?', args: [n] },
      };
      return ops[prefix];
    }
  }
}

export function and(parts: Sql[]): Sql {
  return { sql: parts.map((p) => `(${p.sql})`).join(' AND '), args: parts.flatMap((p) => p.args) };
}

export function or(parts: Sql[]): Sql {
  if (parts.length === 1) return parts[0] as Sql;
  return { sql: parts.map((p) => `(${p.sql})`).join(' OR '), args: parts.flatMap((p) => p.args) };
}

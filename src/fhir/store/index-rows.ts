/**
 * Turns a resource into search-index rows, one table per parameter type
 * (store/schema.ts). Values are recognised by their JSON shape, which is
 * enough for the R4 datatypes the indexed parameters select.
 */
import { paramsFor, type ParamDef } from '../definitions/search-params.js';
import { dateRange } from '../definitions/dates.js';

export interface IndexRows {
  token: Array<[code: string, system: string | null, value: string]>;
  string: Array<[code: string, value: string]>;
  reference: Array<[code: string, targetType: string, targetId: string]>;
  date: Array<[code: string, lo: number, hi: number]>;
  number: Array<[code: string, value: number]>;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null;
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Lower case without diacritics: the string-search normal form (FHIR string search ignores both). */
export function normalizeString(s: string): string {
  return s.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase();
}

/** `Type/id`, `Type/id/_history/v` or an absolute URL ending in one of them → [type, id]. */
export function parseReference(ref: string): [string, string] | undefined {
  if (ref.startsWith('#') || ref.startsWith('urn:')) return undefined;
  const m = /(?:^|\/)([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[^/]+)?$/.exec(ref);
  return m ? [m[1] as string, m[2] as string] : undefined;
}

export function extractIndex(resource: Obj): IndexRows {
  const rows: IndexRows = { token: [], string: [], reference: [], date: [], number: [] };
  const type = resource.resourceType as string;
  for (const def of paramsFor(type).values()) {
    const values = def.extract(resource);
    if (values.length) addRows(rows, def, values);
  }
  return rows;
}

/** Appends to `rows` the rows of `values`, what `def`'s expression selected in a resource. */
export function addRows(rows: IndexRows, def: Pick<ParamDef, 'code' | 'type'>, values: readonly unknown[]): void {
  const code = def.code;
  for (const v of values) {
    switch (def.type) {
      case 'token':
        addToken(rows, code, v);
        break;
      case 'uri':
        if (typeof v === 'string') rows.token.push([code, null, v]);
        break;
      case 'string':
        addString(rows, code, v);
        break;
      case 'reference': {
        const ref = isObj(v) ? str(v.reference) : str(v);
        if (!ref) break;
        const parsed = parseReference(ref);
        // canonical/absolute targets we cannot split are kept whole, searchable by their exact value
        rows.reference.push(parsed ? [code, parsed[0], parsed[1]] : [code, '', ref]);
        break;
      }
      case 'date':
        addDate(rows, code, v);
        break;
      case 'number':
        if (typeof v === 'number') rows.number.push([code, v]);
        else if (isObj(v) && typeof v.value === 'number') rows.number.push([code, v.value]);
        break;
    }
  }
}

function addToken(rows: IndexRows, code: string, v: unknown): void {
  if (typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number') {
    rows.token.push([code, null, String(v)]);
    return;
  }
  if (!isObj(v)) return;
  if (Array.isArray(v.coding)) {
    for (const c of v.coding) if (isObj(c) && str(c.code) !== undefined) rows.token.push([code, str(c.system) ?? null, c.code as string]);
    return;
  }
  // Identifier, ContactPoint: system|value; Coding, Quantity: system|code
  const value = str(v.value) ?? str(v.code);
  if (value !== undefined) rows.token.push([code, str(v.system) ?? null, value]);
}

const NAME_KEYS = ['text', 'family', 'given', 'prefix', 'suffix', 'line', 'city', 'district', 'state', 'postalCode', 'country'];

function addString(rows: IndexRows, code: string, v: unknown): void {
  if (typeof v === 'string') {
    rows.string.push([code, normalizeString(v)]);
    return;
  }
  if (!isObj(v)) return;
  for (const key of NAME_KEYS) {
    const x = v[key];
    if (typeof x === 'string') rows.string.push([code, normalizeString(x)]);
    else if (Array.isArray(x)) for (const y of x) if (typeof y === 'string') rows.string.push([code, normalizeString(y)]);
  }
}

function addDate(rows: IndexRows, code: string, v: unknown): void {
  if (typeof v === 'string') {
    const r = dateRange(v);
    if (r) rows.date.push([code, r[0], r[1]]);
    return;
  }
  if (!isObj(v)) return;
  if ('start' in v || 'end' in v) {
    const lo = str(v.start) ? dateRange(v.start as string)?.[0] : undefined;
    const hi = str(v.end) ? dateRange(v.end as string)?.[1] : undefined;
    if (lo !== undefined || hi !== undefined) rows.date.push([code, lo ?? -8.64e15, hi ?? 8.64e15]);
    return;
  }
  if (Array.isArray(v.event)) for (const e of v.event) addDate(rows, code, e);
}

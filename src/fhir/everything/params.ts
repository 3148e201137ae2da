/**
 * $everything input parameters (http://hl7.org/fhir/R4/patient-operation-everything.html, R4 OperationDefinition
 * Patient-everything): start, end (care dates), _since (instant), _type (comma
 * lists, repeatable), _count; plus our paging `_cursor`. From the URL query
 * (GET) and/or a Parameters body (POST).
 */
import { HospitalApiError } from '../../errors/index.js';
import { dateRange } from '../definitions/dates.js';

/** Default and maximum page size. Large on purpose: the Hospital API fetches whole records. */
export const DEFAULT_COUNT = 1000;
export const MAX_COUNT = 5000;

export interface EverythingParams {
  types?: string[];
  sinceIso?: string;
  /** Inclusive lower bound in ms (start of the `start` date's precision). */
  start?: number;
  /** Exclusive upper bound in ms (end of the `end` date's precision). */
  end?: number;
  count: number;
  cursor?: string;
  /** The parameters as given, for link.self and next links (minus _cursor). */
  echo: Array<[string, string]>;
}

export type ParamSource = Iterable<[string, string]> | { entries(): Iterable<[string, string]> };

const bad = (name: string, detail: string) => new HospitalApiError('ERR_FHIR_EVERYTHING_BAD_PARAM', { name, detail });
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** Pairs from a FHIR Parameters resource (POST body); unknown shapes are rejected. */
export function pairsFromParameters(body: unknown): Array<[string, string]> {
  if (body === undefined || body === null || body === '') return [];
  const b = body as { resourceType?: unknown; parameter?: unknown };
  if (b.resourceType !== 'Parameters') throw bad('body', 'a POST body must be a Parameters resource');
  const out: Array<[string, string]> = [];
  for (const p of Array.isArray(b.parameter) ? b.parameter : []) {
    const entry = p as Record<string, unknown>;
    const name = entry.name;
    const valueKey = Object.keys(entry).find((k) => k.startsWith('value'));
    const value = valueKey ? entry[valueKey] : undefined;
    if (typeof name !== 'string' || (typeof value !== 'string' && typeof value !== 'number')) {
      throw bad(String(name ?? 'parameter'), 'each parameter needs a name and a primitive value[x]');
    }
    out.push([name, String(value)]);
  }
  return out;
}

/** @throws ERR_FHIR_EVERYTHING_BAD_PARAM */
export function parseEverythingParams(source: ParamSource, extra: Array<[string, string]> = []): EverythingParams {
  // An array of pairs also has entries() (index, value), so test for it first.
  const iterable = Array.isArray(source) || !('entries' in source) ? (source as Iterable<[string, string]>) : source.entries();
  const pairs = [...iterable, ...extra];
  const out: EverythingParams = { count: DEFAULT_COUNT, echo: [] };
  const types: string[] = [];
  for (const [name, raw] of pairs) {
    const value = raw.trim();
    if (name !== '_cursor') out.echo.push([name, raw]);
    switch (name) {
      case '_type':
        for (const t of value.split(',')) {
          if (!/^[A-Z][A-Za-z]{1,63}$/.test(t)) throw bad('_type', `"${t}" is not a resource type`);
          if (!types.includes(t)) types.push(t);
        }
        break;
      case '_since':
        if (!INSTANT.test(value) || Number.isNaN(Date.parse(value))) throw bad('_since', `"${value}" is not an instant (e.g. 2024-01-31T10:00:00Z)`);
        out.sinceIso = new Date(value).toISOString();
        break;
      case 'start':
      case 'end': {
        const range = dateRange(value);
        if (!range) throw bad(name, `"${value}" is not a FHIR date`);
        if (name === 'start') out.start = range[0];
        else out.end = range[1];
        break;
      }
      case '_count': {
        if (!/^\d+$/.test(value) || Number(value) < 1) throw bad('_count', `"${value}" is not a positive integer`);
        // Larger requests are lowered to the maximum, as HAPI does (its paging provider's maximum page size), not refused.
        out.count = Math.min(MAX_COUNT, Number(value));
        break;
      }
      case '_cursor':
        out.cursor = value;
        break;
      default:
        // Unknown parameters are ignored as in search (http://hl7.org/fhir/R4/search.html#errors), and not echoed in links.
        out.echo.pop();
    }
  }
  if (types.length > 0) out.types = types;
  if (out.start !== undefined && out.end !== undefined && out.start >= out.end) throw bad('start', 'start is after end');
  return out;
}

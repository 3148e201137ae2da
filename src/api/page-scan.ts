/**
 * The fast path for $everything pages, on the bytes as received: the top-level
 * `entry` array is located and its elements sliced (zero-copy) without being
 * parsed, so each entry goes out exactly as the server sent it (decimals such
 * as 1.50 keep their precision: issue #2 "each element the Bundle entry as the
 * server sent it"). Only the Bundle minus its entries is parsed (links, type).
 * Bytes are read with src/util/json-bytes.ts.
 */
import { HospitalApiError } from '../errors/index.js';
import { CLOSE_ARR, CLOSE_OBJ, COLON, COMMA, OPEN_ARR, OPEN_OBJ, QUOTE, skipWs, stringEnd } from '../util/json-bytes.js';
import { parseBundlePage } from './bundle-page.js';

export interface RawEntry {
  /** The entry's bytes exactly as they appeared in the page. */
  raw: Buffer;
  /**
   * De-duplication key: the fullUrl as a JSON string literal (quotes included, as sent), else
   * `<resourceType>/<id>`, else null. (A leading quote cannot start a resource type: the two never collide.)
   */
  key: string | null;
}

export interface ScannedPage {
  entries: RawEntry[];
  /** The bytes between the entry array's brackets (all entries, as sent). */
  interior: Buffer;
  next: string | undefined;
  self: string | undefined;
}

function bad(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_API_FHIR_BAD_RESPONSE', { detail });
}

function skipString(b: Buffer, i: number): number {
  const end = stringEnd(b, i);
  if (end < 0) throw bad('unterminated string');
  return end;
}

/** Index just past the JSON value starting at `i`. */
function skipValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c !== OPEN_OBJ && c !== OPEN_ARR) {
    while (i < b.length && !(b[i] === COMMA || b[i] === CLOSE_OBJ || b[i] === CLOSE_ARR || b[i]! <= 32)) i++;
    return i;
  }
  let depth = 0;
  for (; i < b.length; i++) {
    const d = b[i];
    if (d === QUOTE) i = skipString(b, i) - 1;
    else if (d === OPEN_OBJ || d === OPEN_ARR) depth++;
    else if ((d === CLOSE_OBJ || d === CLOSE_ARR) && --depth === 0) return i + 1;
  }
  throw bad('unbalanced JSON');
}

interface EntryArray {
  raws: Buffer[];
  /** Offsets of `[` and just past `]`. */
  start: number;
  end: number;
}

/** Finds the top-level `entry` array and slices its elements, or null if there is none. */
export function scanEntries(b: Buffer): EntryArray | null {
  let i = skipWs(b, 0);
  if (b[i] !== OPEN_OBJ) return null;
  i = skipWs(b, i + 1);
  while (i < b.length && b[i] !== CLOSE_OBJ) {
    if (b[i] !== QUOTE) throw bad('malformed JSON');
    const keyEnd = skipString(b, i);
    const isEntry = keyEnd - i === 7 && b.toString('latin1', i, keyEnd) === '"entry"';
    i = skipWs(b, skipWs(b, keyEnd) + 1); // past ':'
    if (isEntry && b[i] === OPEN_ARR) {
      const start = i;
      const raws: Buffer[] = [];
      i = skipWs(b, i + 1);
      while (b[i] !== CLOSE_ARR) {
        if (b[i] !== OPEN_OBJ) throw bad('Bundle.entry holds a non-object');
        const end = skipValue(b, i);
        raws.push(b.subarray(i, end));
        i = skipWs(b, end);
        if (b[i] === COMMA) i = skipWs(b, i + 1);
        else if (b[i] !== CLOSE_ARR) throw bad('malformed Bundle.entry');
      }
      return { raws, start, end: i + 1 };
    }
    i = skipWs(b, skipValue(b, i));
    if (b[i] === COMMA) i = skipWs(b, i + 1);
  }
  return null;
}

const FULL_URL_KEY = Buffer.from('"fullUrl"');

/**
 * The entry's fullUrl as a JSON string literal, as sent (quotes and escapes
 * kept), when it is the entry's first member (HAPI writes it first), read from
 * the bytes: one flat string of the URL alone, which is all the de-duplication
 * set keeps per resource for the whole answer. (A regex capture on a decoded
 * head of the entry kept that whole head alive through each key: the record's
 * text stayed in memory until the answer ended, issue 28.)
 */
function leadingFullUrl(raw: Buffer): string | null {
  let i = skipWs(raw, 1);
  if (raw.compare(FULL_URL_KEY, 0, FULL_URL_KEY.length, i, i + FULL_URL_KEY.length) !== 0) return null;
  i = skipWs(raw, i + FULL_URL_KEY.length);
  if (raw[i] !== COLON) return null;
  i = skipWs(raw, i + 1);
  if (raw[i] !== QUOTE) return null;
  const end = skipString(raw, i);
  return raw.toString('utf8', i, end);
}

/** fullUrl when HAPI wrote it first (the usual case, read in place), else a parse. */
function entryKey(raw: Buffer): string | null {
  const url = leadingFullUrl(raw);
  if (url !== null) return url;
  let e: { fullUrl?: unknown; resource?: { resourceType?: unknown; id?: unknown } };
  try {
    e = JSON.parse(raw.toString('utf8')) as typeof e;
  } catch {
    throw bad('Bundle entry is not JSON');
  }
  if (typeof e.fullUrl === 'string') return JSON.stringify(e.fullUrl);
  const r = e.resource;
  return typeof r?.resourceType === 'string' && typeof r.id === 'string' ? `${r.resourceType}/${r.id}` : null;
}

/** Scans one $everything page. @throws ERR_API_FHIR_BAD_RESPONSE */
export function scanPage(b: Buffer): ScannedPage {
  const arr = scanEntries(b);
  const shell = arr ? `${b.toString('utf8', 0, arr.start)}[]${b.toString('utf8', arr.end)}` : b.toString('utf8');
  const page = parseBundlePage(shell);
  return {
    entries: (arr?.raws ?? []).map((raw) => ({ raw, key: entryKey(raw) })),
    interior: arr ? b.subarray(arr.start + 1, arr.end - 1) : Buffer.alloc(0),
    next: page.next,
    self: page.self,
  };
}

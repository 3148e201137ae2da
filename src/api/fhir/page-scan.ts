/**
 * The fast path for $everything pages, on the bytes as received: the top-level
 * `entry` array is located and its elements delimited without being parsed, so
 * each entry goes out exactly as the server sent it (decimals such as 1.50 keep
 * their precision: issue #2 "each element the Bundle entry as the server sent
 * it"). Only the Bundle minus its entries is parsed (links, type).
 *
 * One pass, and nothing allocated per entry (issue 28): an entry is a pair of
 * offsets into the page, its de-duplication key another pair (the fullUrl's
 * JSON literal, when it is the entry's first member, as HAPI writes it). No view
 * of the page outlives the page, so a page's bytes are free for reuse once it
 * has been written; per-entry Buffer views and key strings were young garbage
 * that a slow caller's page kept long enough to be promoted, and each view kept
 * its whole page alive until the next full collection.
 * Structural bytes are read as in src/util/json-bytes.ts (UTF-8 never reuses an ASCII byte).
 */
import { HospitalApiError } from '../../errors/index.js';
import { BACKSLASH, CLOSE_ARR, CLOSE_OBJ, COLON, COMMA, OPEN_ARR, OPEN_OBJ, QUOTE, skipWs } from '../../util/json-bytes.js';
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

function bad(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_API_FHIR_BAD_RESPONSE', { detail });
}

/**
 * For the string whose opening quote is at `i`: the index just past its closing quote.
 * A byte loop: FHIR strings are mostly short, where a native indexOf per string cost
 * twice the whole scan (issue 28 profile). A backslash always escapes the byte after it (RFC 8259 §7).
 */
function skipString(b: Uint8Array, i: number): number {
  const n = b.length;
  for (let j = i + 1; j < n; j++) {
    const c = b[j];
    if (c === QUOTE) return j + 1;
    if (c === BACKSLASH) j++;
  }
  throw bad('unterminated string');
}

/**
 * The scan's byte classes: 1 a quote, 2 an opening bracket, 3 a closing one, 0 anything else. Most bytes
 * outside strings are 0, and one load from this table replaces the four comparisons each of them took (issue 49).
 */
const CLASS = new Uint8Array(256);
CLASS[QUOTE] = 1;
CLASS[OPEN_OBJ] = 2;
CLASS[OPEN_ARR] = 2;
CLASS[CLOSE_OBJ] = 3;
CLASS[CLOSE_ARR] = 3;

/**
 * Index just past the object or array that is `depth` brackets deep at `i` (its opening bracket, and
 * whatever of it came before `i`, already read): an entry is scanned once, from past its leading fullUrl.
 */
function closeValue(b: Uint8Array, i: number, depth: number): number {
  const n = b.length;
  for (; i < n; i++) {
    const k = CLASS[b[i] as number];
    if (k === 0) continue;
    if (k === 1) i = skipString(b, i) - 1;
    else if (k === 2) depth++;
    else if (--depth === 0) return i + 1;
  }
  throw bad('unbalanced JSON');
}

/** Index just past the JSON value starting at `i`. */
function skipValue(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c !== OPEN_OBJ && c !== OPEN_ARR) {
    while (i < b.length && !(b[i] === COMMA || b[i] === CLOSE_OBJ || b[i] === CLOSE_ARR || b[i]! <= 32)) i++;
    return i;
  }
  return closeValue(b, i + 1, 1);
}

/** Bytes of `"fullUrl"`, the member HAPI writes first in every entry. */
const FULL_URL_KEY = Buffer.from('"fullUrl"');

/** `b` holds `key` at `i`: a byte loop, where a native compare per entry cost more than the nine bytes it compares (issue 49). */
function startsAt(b: Buffer, i: number, key: Buffer): boolean {
  for (let k = 0; k < key.length; k++) if (b[i + k] !== key[k]) return false;
  return true;
}

/**
 * The span of the entry starting at `entryStart` (its `{`) of its fullUrl as a JSON string literal, as sent
 * (quotes and escapes kept), when it is the entry's first member; else -1 (its key is then found by parsing
 * the entry, see ScannedPage.keyOf). Returns where the entry's scan goes on: past that literal, which is then
 * read once (issue 49: it was read here and again by the scan of the whole entry), else past the `{`.
 */
function leadingFullUrl(b: Buffer, entryStart: number, span: Int32Array, at: number): number {
  span[at] = -1;
  let i = skipWs(b, entryStart + 1);
  if (i + FULL_URL_KEY.length > b.length || !startsAt(b, i, FULL_URL_KEY)) return entryStart + 1;
  i = skipWs(b, i + FULL_URL_KEY.length);
  if (b[i] !== COLON) return entryStart + 1;
  i = skipWs(b, i + 1);
  if (b[i] !== QUOTE) return entryStart + 1;
  const end = skipString(b, i);
  span[at] = i;
  span[at + 1] = end;
  return end;
}

/** One $everything page, delimited: offsets into `bytes`, no copies. */
export class ScannedPage {
  constructor(
    /** The page as received. */
    readonly bytes: Buffer,
    /** Entries in the page. */
    readonly count: number,
    /** Entry i is bytes[bounds[2i], bounds[2i+1]). */
    readonly bounds: Uint32Array,
    /** Entry i's leading fullUrl literal is bytes[keys[2i], keys[2i+1]); keys[2i] is -1 when it has none. */
    readonly keys: Int32Array,
    /** The bytes between the entry array's brackets (all entries, as sent). */
    readonly interior: Buffer,
    readonly next: string | undefined,
    readonly self: string | undefined,
  ) {}

  /** Entry i's bytes (a view of the page). */
  raw(i: number): Buffer {
    return this.bytes.subarray(this.bounds[2 * i], this.bounds[2 * i + 1]);
  }

  /**
   * Entry i's key when its fullUrl is not its first member: JSON.stringify of the
   * fullUrl (the literal a server writes for it), else `<resourceType>/<id>`, else null.
   */
  keyOf(i: number): string | null {
    const start = this.keys[2 * i] as number;
    if (start >= 0) return this.bytes.toString('utf8', start, this.keys[2 * i + 1]);
    let e: { fullUrl?: unknown; resource?: { resourceType?: unknown; id?: unknown } };
    try {
      e = JSON.parse(this.raw(i).toString('utf8')) as typeof e;
    } catch {
      throw bad('Bundle entry is not JSON');
    }
    if (typeof e.fullUrl === 'string') return JSON.stringify(e.fullUrl);
    const r = e.resource;
    return typeof r?.resourceType === 'string' && typeof r.id === 'string' ? `${r.resourceType}/${r.id}` : null;
  }

  /** The entries as objects (each a view of the page and its key as a string). */
  get entries(): RawEntry[] {
    return Array.from({ length: this.count }, (_, i) => ({ raw: this.raw(i), key: this.keyOf(i) }));
  }
}

/** Scans one $everything page. @throws ERR_API_FHIR_BAD_RESPONSE */
export function scanPage(b: Buffer): ScannedPage {
  let bounds = new Uint32Array(2 * 64);
  let keys = new Int32Array(2 * 64);
  let count = 0;
  let arr: { start: number; end: number } | null = null;
  let i = skipWs(b, 0);
  if (b[i] === OPEN_OBJ) {
    i = skipWs(b, i + 1);
    while (i < b.length && b[i] !== CLOSE_OBJ) {
      if (b[i] !== QUOTE) throw bad('malformed JSON');
      const keyEnd = skipString(b, i);
      const isEntry = keyEnd - i === 7 && b.toString('latin1', i, keyEnd) === '"entry"';
      i = skipWs(b, skipWs(b, keyEnd) + 1); // past ':'
      if (isEntry && b[i] === OPEN_ARR) {
        const start = i;
        i = skipWs(b, i + 1);
        while (b[i] !== CLOSE_ARR) {
          if (b[i] !== OPEN_OBJ) throw bad('Bundle.entry holds a non-object');
          if (2 * count === bounds.length) {
            bounds = grow(bounds, new Uint32Array(2 * bounds.length));
            keys = grow(keys, new Int32Array(2 * keys.length));
          }
          // One pass over the entry: its leading fullUrl, then the rest of it, one bracket deep.
          const end = closeValue(b, leadingFullUrl(b, i, keys, 2 * count), 1);
          bounds[2 * count] = i;
          bounds[2 * count + 1] = end;
          count++;
          i = skipWs(b, end);
          if (b[i] === COMMA) i = skipWs(b, i + 1);
          else if (b[i] !== CLOSE_ARR) throw bad('malformed Bundle.entry');
        }
        arr = { start, end: i + 1 };
        break;
      }
      i = skipWs(b, skipValue(b, i));
      if (b[i] === COMMA) i = skipWs(b, i + 1);
    }
  }
  const shell = arr ? `${b.toString('utf8', 0, arr.start)}[]${b.toString('utf8', arr.end)}` : b.toString('utf8');
  const page = parseBundlePage(shell);
  const interior = arr ? b.subarray(arr.start + 1, arr.end - 1) : Buffer.alloc(0);
  return new ScannedPage(b, count, bounds, keys, interior, page.next, page.self);
}

function grow<T extends Uint32Array | Int32Array>(from: T, to: T): T {
  to.set(from);
  return to;
}

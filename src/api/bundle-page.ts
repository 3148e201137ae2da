/**
 * One page of a FHIR searchset Bundle: its entries as the raw JSON text the
 * server sent (so decimals such as 1.50 keep their precision, as issue #2
 * asks: "each element the Bundle entry as the server sent it"), plus the
 * parsed fields the client needs (next/self links, dedupe keys).
 */
import { HospitalApiError } from '../errors/index.js';

export interface PageEntry {
  /** The entry exactly as it appeared in the page. */
  raw: string;
  /** `resourceType/id` for de-duplication, or null when the entry has no id. */
  key: string | null;
  resourceType: string | null;
  id: string | null;
  /** searchset entry mode (`match`, `include`, `outcome`), when given. */
  mode: string | null;
}

export interface BundlePage {
  entries: PageEntry[];
  next: string | undefined;
  self: string | undefined;
}

interface Link {
  relation?: unknown;
  url?: unknown;
}

function bad(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_API_FHIR_BAD_RESPONSE', { detail });
}

function skipWs(s: string, i: number): number {
  let c = s.charCodeAt(i);
  while (c === 32 || c === 10 || c === 13 || c === 9) c = s.charCodeAt(++i);
  return i;
}

function skipString(s: string, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = s.indexOf('"', j);
    if (q < 0) throw bad('unterminated string');
    let b = q - 1;
    while (s.charCodeAt(b) === 92) b--;
    if ((q - 1 - b) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** Index just past the JSON value starting at `i` (the text is known to parse). */
function skipValue(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c === 34) return skipString(s, i);
  if (c !== 123 && c !== 91) {
    while (i < s.length && !',}] \n\r\t'.includes(s[i] as string)) i++;
    return i;
  }
  let depth = 0;
  for (; i < s.length; i++) {
    const d = s.charCodeAt(i);
    if (d === 34) {
      i = skipString(s, i) - 1;
    } else if (d === 123 || d === 91) {
      depth++;
    } else if (d === 125 || d === 93) {
      if (--depth === 0) return i + 1;
    }
  }
  throw bad('unbalanced JSON');
}

export interface EntryArray {
  /** Raw text of each element of the top-level `entry` array. */
  raws: string[];
  /** Offsets of the array itself (`[` … `]` inclusive-exclusive). */
  start: number;
  end: number;
}

/** Finds the top-level `entry` array and slices its elements, or null if there is none. */
export function scanEntries(s: string): EntryArray | null {
  let i = skipWs(s, 0);
  if (s[i] !== '{') return null;
  i = skipWs(s, i + 1);
  while (i < s.length && s[i] !== '}') {
    if (s[i] !== '"') throw bad('malformed JSON');
    const keyEnd = skipString(s, i);
    const key = JSON.parse(s.slice(i, keyEnd)) as string;
    i = skipWs(s, skipWs(s, keyEnd) + 1); // past ':'
    if (key === 'entry' && s[i] === '[') {
      const start = i;
      const raws: string[] = [];
      i = skipWs(s, i + 1);
      while (s[i] !== ']') {
        if (s[i] !== '{') throw bad('Bundle.entry holds a non-object');
        const end = skipValue(s, i);
        raws.push(s.slice(i, end));
        i = skipWs(s, end);
        if (s[i] === ',') i = skipWs(s, i + 1);
        else if (s[i] !== ']') throw bad('malformed Bundle.entry');
      }
      return { raws, start, end: i + 1 };
    }
    i = skipWs(s, skipValue(s, i));
    if (s[i] === ',') i = skipWs(s, i + 1);
  }
  return null;
}

/** Raw text of each element of the top-level `entry` array. */
export function rawEntries(s: string): string[] {
  return scanEntries(s)?.raws ?? [];
}

const FULL_URL_FIRST = /^\{\s*"fullUrl"\s*:\s*"((?:[^"\\]|\\.)*)"/;

/** De-duplication key of a raw entry: its fullUrl (HAPI writes it first), else resourceType/id. */
function entryKey(raw: string): string | null {
  const m = FULL_URL_FIRST.exec(raw);
  if (m) return `url:${m[1]}`;
  let e: { fullUrl?: unknown; resource?: { resourceType?: unknown; id?: unknown } };
  try {
    e = JSON.parse(raw) as typeof e;
  } catch {
    throw bad('Bundle entry is not JSON');
  }
  if (typeof e.fullUrl === 'string') return `url:${JSON.stringify(e.fullUrl).slice(1, -1)}`;
  const r = e.resource;
  return typeof r?.resourceType === 'string' && typeof r.id === 'string' ? `${r.resourceType}/${r.id}` : null;
}

/**
 * The fast path for $everything pages: the Bundle minus its entries is parsed
 * (links, type); entries are sliced, not parsed, and keyed by fullUrl. Entries
 * are passed on as sent, after the scanner's structural check.
 * @throws ERR_API_FHIR_BAD_RESPONSE
 */
export function scanBundlePage(text: string): BundlePage {
  const arr = scanEntries(text);
  const shell = arr ? `${text.slice(0, arr.start)}[]${text.slice(arr.end)}` : text;
  const page = parseBundlePage(shell);
  const entries = (arr?.raws ?? []).map((raw): PageEntry => ({ raw, key: entryKey(raw), resourceType: null, id: null, mode: null }));
  return { entries, next: page.next, self: page.self };
}

function linkOf(links: unknown, relation: string): string | undefined {
  if (!Array.isArray(links)) return undefined;
  const l = (links as Link[]).find((x) => x && x.relation === relation);
  return typeof l?.url === 'string' ? l.url : undefined;
}

/** Parses one page. @throws ERR_API_FHIR_BAD_RESPONSE when it is not a Bundle */
export function parseBundlePage(text: string): BundlePage {
  let doc: { resourceType?: unknown; entry?: unknown; link?: unknown };
  try {
    doc = JSON.parse(text) as typeof doc;
  } catch {
    throw bad('page is not JSON');
  }
  if (!doc || doc.resourceType !== 'Bundle') throw bad('page is not a Bundle');
  const parsed = doc.entry === undefined ? [] : doc.entry;
  if (!Array.isArray(parsed)) throw bad('Bundle.entry is not an array');
  let raws = rawEntries(text);
  if (raws.length !== parsed.length) raws = parsed.map((e) => JSON.stringify(e));
  const entries = parsed.map((e: unknown, n: number): PageEntry => {
    const entry = (e ?? {}) as { resource?: { resourceType?: unknown; id?: unknown }; search?: { mode?: unknown } };
    const rt = typeof entry.resource?.resourceType === 'string' ? entry.resource.resourceType : null;
    const id = typeof entry.resource?.id === 'string' ? entry.resource.id : null;
    return {
      raw: raws[n] as string,
      key: rt && id ? `${rt}/${id}` : null,
      resourceType: rt,
      id,
      mode: typeof entry.search?.mode === 'string' ? entry.search.mode : null,
    };
  });
  return { entries, next: linkOf(doc.link, 'next'), self: linkOf(doc.link, 'self') };
}

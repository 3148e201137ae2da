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

/** Raw text of each element of the top-level `entry` array. */
export function rawEntries(s: string): string[] {
  let i = skipWs(s, 0);
  if (s[i] !== '{') return [];
  i = skipWs(s, i + 1);
  while (i < s.length && s[i] !== '}') {
    const keyEnd = skipString(s, i);
    const key = JSON.parse(s.slice(i, keyEnd)) as string;
    i = skipWs(s, skipWs(s, keyEnd) + 1); // past ':'
    if (key === 'entry' && s[i] === '[') {
      const out: string[] = [];
      i = skipWs(s, i + 1);
      while (s[i] !== ']') {
        const end = skipValue(s, i);
        out.push(s.slice(i, end));
        i = skipWs(s, end);
        if (s[i] === ',') i = skipWs(s, i + 1);
      }
      return out;
    }
    i = skipWs(s, skipValue(s, i));
    if (s[i] === ',') i = skipWs(s, i + 1);
  }
  return [];
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

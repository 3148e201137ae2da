/** Searchset Bundles and their paging links, shared by search and `$everything`. */
import { storedText } from '../store/stored-json.js';
import type { Resource } from '../store/types.js';

export interface SearchsetBundle {
  resourceType: 'Bundle';
  id?: string;
  meta: { lastUpdated: string };
  type: 'searchset';
  total?: number;
  link: Array<{ relation: string; url: string }>;
  entry: Array<{ fullUrl: string; resource: Resource; search: { mode: 'match' | 'include' } }>;
}

/** What encodeURIComponent leaves as it is and the application/x-www-form-urlencoded serializer escapes. */
const FORM_ONLY = /[!'()~]/g;
const formEscape = (c: string): string => `%${c.charCodeAt(0).toString(16).toUpperCase()}`;

/**
 * A name or value as URLSearchParams writes it (the WHATWG URL Standard's application/x-www-form-urlencoded
 * serializer: UTF-8, every byte percent-encoded but ASCII letters, digits and `*-._`), with a space as %20, not `+`.
 * Throws URIError for a lone surrogate (encodeURIComponent), which URLSearchParams writes as U+FFFD instead.
 */
function formEncode(text: string): string {
  return encodeURIComponent(text).replace(FORM_ONLY, formEscape);
}

/** `${base}/${path}?params&_cursor=…` with every value percent-encoded (escapes inside values survive). */
export function pageLink(base: string, path: string, params: Array<[string, string]>, cursor?: string | null): string {
  const query = (params.some(([k]) => k === '_cursor') ? undefined : encodedQuery(params, cursor)) ?? searchParamsQuery(params, cursor);
  return `${base}/${path}${query ? `?${query}` : ''}`;
}

/**
 * searchParamsQuery's bytes without building a URLSearchParams (issue 49: two links on every search page), for
 * params without `_cursor` (where its set() appends); undefined for a lone surrogate, which URLSearchParams writes
 * as U+FFFD.
 */
function encodedQuery(params: Array<[string, string]>, cursor?: string | null): string | undefined {
  try {
    const pairs = params.map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`);
    if (cursor) pairs.push(`_cursor=${formEncode(cursor)}`);
    return pairs.join('&');
  } catch (err) {
    if (err instanceof URIError) return undefined;
    throw err;
  }
}

function searchParamsQuery(params: Array<[string, string]>, cursor?: string | null): string {
  const q = new URLSearchParams(params);
  if (cursor) q.set('_cursor', cursor);
  return q.toString().replace(/\+/g, '%20');
}

export function searchsetBundle(options: {
  base: string;
  matches: Resource[];
  included?: Resource[];
  selfUrl: string;
  nextUrl?: string | null;
  total?: number;
}): SearchsetBundle {
  const link = [{ relation: 'self', url: options.selfUrl }];
  if (options.nextUrl) link.push({ relation: 'next', url: options.nextUrl });
  const entry = (r: Resource, mode: 'match' | 'include') => ({ fullUrl: `${options.base}/${r.resourceType}/${r.id}`, resource: r, search: { mode } });
  return {
    resourceType: 'Bundle',
    meta: { lastUpdated: new Date().toISOString() },
    type: 'searchset',
    ...(options.total !== undefined ? { total: options.total } : {}),
    link,
    entry: [...options.matches.map((r) => entry(r, 'match')), ...(options.included ?? []).map((r) => entry(r, 'include'))],
  };
}

const ENTRY_KEYS = ['fullUrl', 'resource', 'search'];

function isSearchset(body: unknown): body is SearchsetBundle {
  const b = body as Partial<SearchsetBundle> | null;
  return typeof b === 'object' && b !== null && b.resourceType === 'Bundle' && b.type === 'searchset' && Array.isArray(b.entry);
}

/**
 * JSON.stringify(body), byte for byte, with each entry's resource written as the text the store holds for it
 * (store/stored-json.ts) rather than serialized a second time (issue 49: for a 1,000-resource `$everything` page
 * that serialization was about a quarter of the server's time). Only a searchset Bundle shaped as
 * searchsetBundle makes it (`entry` its last member, each entry fullUrl, resource, search in that order) takes
 * this path, and within it only resources the store parsed; anything else is JSON.stringify's own output.
 */
export function bundleJson(body: unknown): string {
  if (!isSearchset(body)) return JSON.stringify(body);
  const keys = Object.keys(body);
  if (keys[keys.length - 1] !== 'entry') return JSON.stringify(body);
  const { entry, ...head } = body;
  const parts = new Array<string>(entry.length);
  for (let i = 0; i < entry.length; i++) {
    const e = entry[i]!;
    const text = e && typeof e === 'object' && e.resource && typeof e.fullUrl === 'string' ? storedText(e.resource) : undefined;
    const k = text === undefined ? [] : Object.keys(e);
    parts[i] =
      text !== undefined && k.length === 3 && k[0] === ENTRY_KEYS[0] && k[1] === ENTRY_KEYS[1] && k[2] === ENTRY_KEYS[2]
        ? `{"fullUrl":${JSON.stringify(e.fullUrl)},"resource":${text},"search":${JSON.stringify(e.search)}}`
        : JSON.stringify(e);
  }
  const start = JSON.stringify(head);
  return `${start.slice(0, -1)}${start.length > 2 ? ',' : ''}"entry":[${parts.join(',')}]}`;
}

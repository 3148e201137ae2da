/** Searchset Bundles and their paging links, shared by search and `$everything`. */
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

/** `${base}/${path}?params&_cursor=…` with every value percent-encoded (escapes inside values survive). */
export function pageLink(base: string, path: string, params: Array<[string, string]>, cursor?: string | null): string {
  const q = new URLSearchParams(params);
  if (cursor) q.set('_cursor', cursor);
  const query = q.toString().replace(/\+/g, '%20');
  return `${base}/${path}${query ? `?${query}` : ''}`;
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

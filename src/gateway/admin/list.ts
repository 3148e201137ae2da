/**
 * List responses (Kong's kong/api/endpoints.lua): `{"data":[…],"next":null}` or, with
 * more pages, `{"data":[…],"offset":"…","next":"/services?offset=…&size=N"}`.
 * `size` 1..1000 (default 100); `?tags=a,b` is AND, `a/b` is OR. The offset is
 * opaque: base64 of the position in the (insertion-ordered) list.
 */
import { invalidOffset, invalidSize } from '../model/kong-error.js';

type Entity = Record<string, unknown>;

function tagFilter(tags: string | null): ((e: Entity) => boolean) | null {
  if (tags === null || tags === '') return null;
  const any = tags.includes('/');
  const wanted = tags.split(any ? '/' : ',').filter((t) => t !== '');
  return (e) => {
    const have = Array.isArray(e.tags) ? (e.tags as string[]) : [];
    return any ? wanted.some((t) => have.includes(t)) : wanted.every((t) => have.includes(t));
  };
}

/** @throws KongError 400 invalid size / invalid offset */
export function paginate(items: readonly Entity[], query: URLSearchParams, path: string): Record<string, unknown> {
  const sizeParam = query.get('size');
  let size = 100;
  if (sizeParam !== null) {
    if (!/^\d+$/.test(sizeParam) || Number(sizeParam) < 1 || Number(sizeParam) > 1000) throw invalidSize();
    size = Number(sizeParam);
  }
  const offsetParam = query.get('offset');
  let start = 0;
  if (offsetParam !== null) {
    const decoded = Buffer.from(offsetParam, 'base64').toString('utf8');
    if (!/^\d+$/.test(decoded) || Buffer.from(decoded).toString('base64') !== offsetParam) throw invalidOffset(offsetParam);
    start = Number(decoded);
  }
  const filter = tagFilter(query.get('tags'));
  const all = filter ? items.filter(filter) : items;
  const data = all.slice(start, start + size);
  if (start + size >= all.length) return { data, next: null };
  const offset = Buffer.from(String(start + size)).toString('base64');
  const tags = query.get('tags');
  const next = `${path}?offset=${encodeURIComponent(offset)}&size=${size}${tags ? `&tags=${encodeURIComponent(tags)}` : ''}`;
  return { data, offset, next };
}

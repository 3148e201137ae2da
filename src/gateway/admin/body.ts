/**
 * Admin request bodies (kong.md §1 "General"): JSON or form-urlencoded with
 * dotted keys (`config.minute=5`, `service.id=…`, `paths[]=/a`), or multipart
 * text fields with the same keys. Anything
 * else is 415; bad JSON is 400 "Cannot parse JSON body".
 */
import { badRequest, KongError } from '../model/kong-error.js';

export interface ParsedBody {
  data: Record<string, unknown>;
  /** Form values are strings; validators coerce them (Kong does the same). */
  form: boolean;
}

type Node = Record<string, unknown>;

function setPath(root: Node, key: string, value: string): void {
  const tokens: (string | number | null)[] = [];
  for (const part of key.split('.')) {
    const m = /^([^[\]]*)((?:\[\d*\])*)$/.exec(part);
    if (!m) {
      tokens.push(part);
      continue;
    }
    if (m[1] !== '') tokens.push(m[1] as string);
    for (const idx of (m[2] as string).match(/\[(\d*)\]/g) ?? []) tokens.push(idx === '[]' ? null : Number(idx.slice(1, -1)) - 1);
  }
  let node: Node | unknown[] = root;
  for (let i = 0; i < tokens.length; i++) {
    const tok = tokens[i] as string | number | null;
    const last = i === tokens.length - 1;
    const nextIsIndex = !last && typeof tokens[i + 1] !== 'string';
    if (Array.isArray(node)) {
      const idx = tok === null || typeof tok === 'string' ? node.length : Math.max(0, tok);
      if (last) node[idx] = value;
      else node = (node[idx] ??= nextIsIndex ? [] : {}) as Node | unknown[];
      continue;
    }
    const name = String(tok);
    if (last) {
      const prev = node[name];
      // A repeated plain key (`paths=/a&paths=/b`) becomes an array.
      node[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [prev, value];
    } else {
      const existing = node[name];
      node = (typeof existing === 'object' && existing !== null ? existing : (node[name] = nextIsIndex ? [] : {})) as Node | unknown[];
    }
  }
}

/** Parses `application/x-www-form-urlencoded` into nested objects and arrays. */
export function parseForm(text: string): Record<string, unknown> {
  const out: Node = {};
  for (const [key, value] of new URLSearchParams(text)) setPath(out, key, value);
  return out;
}

/** Parses `multipart/form-data` text fields with the same key rules as forms. @throws KongError 400 */
export function parseMultipart(text: string, contentType: string): Record<string, unknown> {
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (!boundary) throw badRequest('multipart body without a boundary');
  const out: Node = {};
  for (const part of text.split(`--${boundary}`).slice(1)) {
    if (part.startsWith('--')) break;
    const split = part.indexOf('\r\n\r\n');
    if (split < 0) continue;
    const name = /content-disposition:[^\r\n]*\bname="([^"]*)"/i.exec(part.slice(0, split))?.[1];
    if (name === undefined) continue;
    setPath(out, name, part.slice(split + 4).replace(/\r\n$/, ''));
  }
  return out;
}

/**
 * Parses a request body by its Content-Type; an empty body is `{}`.
 * `extraTypes` lets POST /config take raw YAML.
 * @throws KongError 400 (bad JSON), 415 (other types)
 */
export function parseBody(contentType: string | undefined, body: Buffer | undefined, extraTypes: readonly string[] = []): ParsedBody {
  const text = body?.toString('utf8') ?? '';
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (text.trim() === '' && (type === '' || type === 'application/json' || type === 'application/x-www-form-urlencoded')) {
    return { data: {}, form: false };
  }
  if (type === 'application/json' || type.endsWith('+json')) {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      throw badRequest('Cannot parse JSON body');
    }
    if (typeof data !== 'object' || data === null || Array.isArray(data)) throw badRequest('Cannot parse JSON body');
    return { data: data as Record<string, unknown>, form: false };
  }
  if (type === 'application/x-www-form-urlencoded') return { data: parseForm(text), form: true };
  if (type === 'multipart/form-data') return { data: parseMultipart(text, contentType ?? ''), form: true };
  if (extraTypes.includes(type)) return { data: { config: text }, form: false };
  throw new KongError('ERR_GATEWAY_ADMIN_MEDIA_TYPE', { message: 'Unsupported Content-Type' });
}

/**
 * Admin request bodies (Kong's kong/api/api_helpers.lua): JSON, form-urlencoded with
 * dotted keys (`config.minute=5`, `service.id=…`, `paths[]=/a`), or
 * multipart fields and files with the same keys. Anything else is 415; bad
 * JSON is 400 "Cannot parse JSON body".
 *
 * Parsed by maintained parsers (issue 12: a hand-written form parser let
 * `__proto__.prepare=1` poison every later request): JSON by
 * secure-json-parse, forms by `qs`, multipart by busboy (the parser under
 * @fastify/multipart). A key naming `__proto__`, `constructor` or
 * `prototype` is refused with 400 before anything is built from it.
 * Bodies must be UTF-8 (or its ASCII subset): another declared charset is
 * 415, bytes that are not UTF-8 are 400, never silently misread.
 */
import busboy from 'busboy';
import qs from 'qs';
import secureJson from 'secure-json-parse';
import { badRequest, KongError } from '../model/kong-error.js';

export interface ParsedBody {
  data: Record<string, unknown>;
  /** Form values are strings; validators coerce them (Kong does the same). */
  form: boolean;
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const MAX_FIELDS = 1000;

/** The media type and charset of a Content-Type header, lower-cased. */
export function parseContentType(header: string | undefined): { type: string; charset: string | null } {
  const parts = (header ?? '').split(';');
  const type = (parts[0] ?? '').trim().toLowerCase();
  let charset: string | null = null;
  for (const p of parts.slice(1)) {
    const eq = p.indexOf('=');
    if (eq < 0 || p.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    charset = p.slice(eq + 1).trim().replace(/^"|"$/g, '').toLowerCase();
  }
  return { type, charset };
}

const UTF8_NAMES = new Set(['utf-8', 'utf8', 'us-ascii', 'ascii']);

function unsupportedCharset(charset: string): KongError {
  return new KongError('ERR_GATEWAY_ADMIN_MEDIA_TYPE', { message: `Unsupported charset '${charset}': send the body as UTF-8` });
}

function decodeUtf8(body: Buffer | undefined): string {
  if (!body || body.length === 0) return '';
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw badRequest('Request body is not valid UTF-8');
  }
}

function refuseKey(key: string): KongError {
  return badRequest(`Refused body key '${key.slice(0, 100)}': __proto__, constructor and prototype are not allowed`);
}

/** `a.b[0].c` → its segments; any forbidden one refuses the whole body. */
function checkKey(key: string): void {
  for (const seg of key.split(/[.[\]]/)) if (FORBIDDEN_KEYS.has(seg)) throw refuseKey(key);
}

/** Percent-decoding that refuses bytes that are not UTF-8 (qs's default falls back to the raw text). */
function strictDecoder(str: string): string {
  try {
    return decodeURIComponent(str.replace(/\+/g, ' '));
  } catch {
    throw badRequest('Form body is not valid UTF-8 percent-encoding');
  }
}

/** Parses `application/x-www-form-urlencoded` into nested objects and arrays (Kong's 1-based `[n]` indices work as positions). */
export function parseForm(text: string): Record<string, unknown> {
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    checkKey(strictDecoder(eq < 0 ? pair : pair.slice(0, eq)));
  }
  try {
    return qs.parse(text, {
      allowDots: true,
      depth: 10,
      arrayLimit: MAX_FIELDS,
      parameterLimit: MAX_FIELDS,
      throwOnLimitExceeded: true,
      decoder: strictDecoder,
    }) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof KongError) throw err;
    throw badRequest(`Cannot parse form body: ${(err as Error).message}`);
  }
}

/** Parses `multipart/form-data` fields and files (as text) with the same key rules as forms. @throws KongError 400 */
export async function parseMultipart(body: Buffer, contentType: string): Promise<Record<string, unknown>> {
  const pairs = await new Promise<[string, string][]>((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: { 'content-type': contentType }, limits: { fields: MAX_FIELDS, files: 10, fieldSize: 1 << 20, fileSize: 1 << 20 } });
    } catch (err) {
      reject(badRequest(`Cannot parse multipart body: ${(err as Error).message}`));
      return;
    }
    const out: [string, string][] = [];
    let failed: KongError | null = null;
    const fail = (e: KongError): void => {
      failed ??= e;
    };
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated || info.nameTruncated) fail(badRequest(`multipart field '${name.slice(0, 100)}' is too large`));
      out.push([name, value]);
    });
    bb.on('file', (name, stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => fail(badRequest(`multipart file '${name.slice(0, 100)}' is too large`)));
      stream.on('close', () => {
        try {
          out.push([name, decodeUtf8(Buffer.concat(chunks))]);
        } catch (e) {
          fail(e as KongError);
        }
      });
    });
    bb.on('fieldsLimit', () => fail(badRequest(`more than ${MAX_FIELDS} multipart fields`)));
    bb.on('error', (err) => reject(badRequest(`Cannot parse multipart body: ${(err as Error).message}`)));
    bb.on('close', () => (failed ? reject(failed) : resolve(out)));
    bb.end(body);
  });
  for (const [name] of pairs) checkKey(name);
  const params = new URLSearchParams();
  for (const [name, value] of pairs) params.append(name, value);
  return parseForm(params.toString());
}

/** Refuses a parsed document (YAML for POST /config) holding a forbidden key at any depth. */
export function assertNoForbiddenKeys(value: unknown): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) stack.push(...v);
    else
      for (const k of Object.keys(v)) {
        if (FORBIDDEN_KEYS.has(k)) throw refuseKey(k);
        stack.push((v as Record<string, unknown>)[k]);
      }
  }
}

function parseJson(text: string): Record<string, unknown> {
  let data: unknown;
  try {
    data = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const msg = (err as Error).message;
    if (/prototype|constructor/i.test(msg)) throw refuseKey(msg.includes('constructor') ? 'constructor.prototype' : '__proto__');
    throw badRequest('Cannot parse JSON body');
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw badRequest('Cannot parse JSON body');
  return data as Record<string, unknown>;
}

/**
 * Parses a request body by its Content-Type; an empty body is `{}`.
 * `extraTypes` lets POST /config take raw YAML.
 * @throws KongError 400 (bad JSON, bad UTF-8, refused key), 415 (other types or charsets)
 */
export async function parseBody(contentType: string | undefined, body: Buffer | undefined, extraTypes: readonly string[] = []): Promise<ParsedBody> {
  const { type, charset } = parseContentType(contentType);
  if (charset !== null && !UTF8_NAMES.has(charset)) throw unsupportedCharset(charset);
  if (type === 'multipart/form-data') {
    if (!body || body.length === 0) return { data: {}, form: true };
    return { data: await parseMultipart(body, contentType ?? ''), form: true };
  }
  const text = decodeUtf8(body);
  if (text.trim() === '' && (type === '' || type === 'application/json' || type === 'application/x-www-form-urlencoded')) {
    return { data: {}, form: false };
  }
  if (type === 'application/json' || type.endsWith('+json')) return { data: parseJson(text), form: false };
  if (type === 'application/x-www-form-urlencoded') return { data: parseForm(text), form: true };
  if (extraTypes.includes(type)) return { data: { config: text }, form: false };
  throw new KongError('ERR_GATEWAY_ADMIN_MEDIA_TYPE', { message: 'Unsupported Content-Type' });
}

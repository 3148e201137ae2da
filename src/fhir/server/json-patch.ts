/** RFC 6902 JSON Patch (add, remove, replace, move, copy, test) on a copy of the document. */
import { isDeepStrictEqual } from 'node:util';
import { HospitalApiError } from '../../errors/index.js';
import { FORBIDDEN_KEYS } from '../validation/forbidden-keys.js';

interface Op {
  op: string;
  path: string;
  from?: string;
  value?: unknown;
}

type Container = Record<string, unknown> | unknown[];

function fail(detail: string): never {
  throw new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `JSON Patch: ${detail}` });
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) fail(`"${path}" is not a JSON pointer`);
  const tokens = path.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  // `/__proto__/x` would walk into Object.prototype and write there; no FHIR element has these names
  const bad = tokens.find((t) => FORBIDDEN_KEYS.has(t));
  if (bad !== undefined) fail(`"${bad}" in ${path} is not a FHIR element`);
  return tokens;
}

/** The container of the last token and that token; throws when the parent does not exist. */
function locate(doc: unknown, tokens: string[]): [Container, string] {
  let node = doc;
  for (const t of tokens.slice(0, -1)) {
    const next = Array.isArray(node) ? node[Number(t)] : node && typeof node === 'object' ? (node as Record<string, unknown>)[t] : undefined;
    if (next === undefined || next === null || typeof next !== 'object') fail(`path /${tokens.join('/')} does not exist`);
    node = next;
  }
  if (!node || typeof node !== 'object') fail('cannot patch the document root');
  return [node as Container, tokens[tokens.length - 1] as string];
}

function index(arr: unknown[], token: string, forAdd: boolean): number {
  if (forAdd && token === '-') return arr.length;
  if (!/^(0|[1-9]\d*)$/.test(token)) fail(`"${token}" is not an array index`);
  const i = Number(token);
  if (i > arr.length || (!forAdd && i === arr.length)) fail(`index ${i} is out of range`);
  return i;
}

function get(doc: unknown, path: string): unknown {
  const tokens = pointer(path);
  if (tokens.length === 0) return doc;
  const [c, t] = locate(doc, tokens);
  const v = Array.isArray(c) ? c[index(c, t, false)] : c[t];
  if (v === undefined) fail(`path ${path} does not exist`);
  return v;
}

function remove(doc: unknown, path: string): unknown {
  const [c, t] = locate(doc, pointer(path));
  if (Array.isArray(c)) return c.splice(index(c, t, false), 1)[0];
  if (!(t in c)) fail(`path ${path} does not exist`);
  const v = c[t];
  delete c[t];
  return v;
}

function add(doc: unknown, path: string, value: unknown): void {
  const [c, t] = locate(doc, pointer(path));
  if (Array.isArray(c)) c.splice(index(c, t, true), 0, value);
  else c[t] = value;
}

export function applyJsonPatch<T>(document: T, patch: unknown): T {
  if (!Array.isArray(patch)) fail('the body must be an array of operations');
  const doc = structuredClone(document) as unknown;
  for (const raw of patch as Op[]) {
    if (!raw || typeof raw !== 'object' || typeof raw.path !== 'string') fail('each operation needs op and path');
    if (pointer(raw.path).length === 0) fail('the document root cannot be patched');
    switch (raw.op) {
      case 'add':
        add(doc, raw.path, structuredClone(raw.value));
        break;
      case 'remove':
        remove(doc, raw.path);
        break;
      case 'replace':
        remove(doc, raw.path);
        add(doc, raw.path, structuredClone(raw.value));
        break;
      case 'move': {
        if (typeof raw.from !== 'string') fail('move needs from');
        add(doc, raw.path, remove(doc, raw.from));
        break;
      }
      case 'copy':
        if (typeof raw.from !== 'string') fail('copy needs from');
        add(doc, raw.path, structuredClone(get(doc, raw.from)));
        break;
      case 'test':
        if (!isDeepStrictEqual(get(doc, raw.path), raw.value)) {
          throw new HospitalApiError('ERR_FHIR_UNPROCESSABLE', { detail: `JSON Patch test failed at ${raw.path}` });
        }
        break;
      default:
        fail(`unknown op "${String(raw.op)}"`);
    }
  }
  return doc as T;
}

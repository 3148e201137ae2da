/**
 * JSON request bodies, parsed without holding the event loop however large they are (issue 24: the
 * FHIR server "parses and commits a large Bundle without stalling other callers").
 *
 * One pass over the bytes (src/util/json-bytes.ts) checks what the server refuses before looking at
 * any value: nesting deeper than `maxDepth`, and keys that reach a prototype (`__proto__`,
 * `constructor`, `prototype`; forbidden-keys.ts). The same pass cuts the body into pieces: each member
 * of the top-level object and, when a member (or the body) is an array such as `Bundle.entry`, each of
 * its elements. Every piece is parsed on its own by JSON.parse, and the event loop gets a turn between
 * stretches of pieces (time-slice.ts), so a 20,000-entry transaction never runs as one block: only a
 * single entry is parsed in one go. The result is the value JSON.parse gives for the whole body
 * (member order, a repeated key's last value). A small body runs through the same code in one stretch.
 *
 * Text that is not Unicode is refused (issue 45): bytes that are not UTF-8 (Buffer decoding made them
 * U+FFFD, so what was stored differed from what was sent) and a `\uD800`-style escape without its
 * pair (stored as sent, indexed as U+FFFD). FHIR's JSON is UTF-8 Unicode (http://hl7.org/fhir/R4/json.html).
 */
import { isUtf8 } from 'node:buffer';
import { HospitalApiError } from '../../errors/index.js';
import { CLOSE_ARR, CLOSE_OBJ, COLON, COMMA, OPEN_ARR, OPEN_OBJ, QUOTE, BACKSLASH, skipWs, stringEnd } from '../../util/json-bytes.js';
import { FORBIDDEN_KEYS, forbiddenKeyPath } from '../validation/forbidden-keys.js';
import { drain, sliced, type Tick } from './time-slice.js';

/**
 * The most items one JSON array may hold (issue 45), except the body's own top-level `entry` (a Bundle's, bounded
 * by the body limit): counted while scanning, before anything is parsed. HL7's R4 example set needs at most
 * 28,517 (ImplementationGuide.manifest.page); 100,000 `Patient.name.given` (400 KB) took the server down.
 */
export const MAX_ARRAY_ITEMS = 50_000;

function tooMany(path: string): HospitalApiError {
  return new HospitalApiError('ERR_FHIR_TOO_COMPLEX', { detail: `an array at or below ${path} holds more than ${MAX_ARRAY_ITEMS} items` });
}

/** From this size a body is parsed in stretches with turns of the event loop between them. */
export const SLICED_BODY_BYTES = 64 * 1024;

function notJson(detail: string): HospitalApiError {
  return new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `body is not JSON: ${detail}` });
}

function tooDeep(maxDepth: number): HospitalApiError {
  return new HospitalApiError('ERR_FHIR_TOO_COMPLEX', { detail: `JSON nested deeper than ${maxDepth} levels` });
}

function forbiddenKey(path: string): HospitalApiError {
  const text = `"${path.slice(path.lastIndexOf('.') + 1)}" is not a FHIR element`;
  return new HospitalApiError('ERR_FHIR_FORBIDDEN_KEY', { path }, { cause: { issues: [{ code: 'structure', details: { text }, expression: [path] }] } });
}

/** Whether the key string between the quotes at `start` and `end - 1` is a forbidden key. */
function isForbiddenKey(b: Buffer, start: number, end: number): boolean {
  const len = end - start - 2;
  for (let k = start + 1; k < end - 1; k++) {
    // an escaped key (`"\u005f_proto__"`) is decoded as JSON.parse would
    if (b[k] === BACKSLASH) return FORBIDDEN_KEYS.has(JSON.parse(b.toString('utf8', start, end)) as string);
  }
  return (len === 9 || len === 11) && FORBIDDEN_KEYS.has(b.toString('latin1', start + 1, end - 1));
}

interface Scan {
  maxDepth: number;
  /** Set when the last value scanned holds a forbidden key (its path is worked out from its parsed value). */
  forbidden: boolean;
}

/**
 * The index just past the JSON value at `i`, whose containers sit at nesting level `level` and below
 * (the body's own value is level 1). Exact for valid JSON; invalid JSON is refused here or by JSON.parse.
 */
function scanValue(b: Buffer, i: number, level: number, s: Scan, path: string): number {
  const c = b[i];
  if (c === QUOTE) {
    const end = stringEnd(b, i);
    if (end < 0) throw notJson(`unterminated string at byte ${i}`);
    return end;
  }
  if (c !== OPEN_OBJ && c !== OPEN_ARR) {
    const start = i;
    while (i < b.length && !(b[i] === COMMA || b[i] === CLOSE_OBJ || b[i] === CLOSE_ARR || b[i]! <= 32)) i++;
    if (i === start) throw notJson(`unexpected ${i < b.length ? `"${String.fromCharCode(b[i]!)}"` : 'end'} at byte ${i}`);
    return i;
  }
  // open containers, innermost last: true for an object; for an array, the commas seen in it so far
  const objects: boolean[] = [];
  const commas: number[] = [];
  let expectKey = false;
  for (; i < b.length; i++) {
    const d = b[i];
    if (d === QUOTE) {
      const end = stringEnd(b, i);
      if (end < 0) throw notJson(`unterminated string at byte ${i}`);
      if (expectKey) {
        if (isForbiddenKey(b, i, end)) s.forbidden = true;
        expectKey = false;
      }
      i = end - 1;
    } else if (d === OPEN_OBJ || d === OPEN_ARR) {
      if (level + objects.length > s.maxDepth) throw tooDeep(s.maxDepth);
      objects.push(d === OPEN_OBJ);
      commas.push(0);
      expectKey = d === OPEN_OBJ;
    } else if (d === CLOSE_OBJ || d === CLOSE_ARR) {
      if (objects.pop() !== (d === CLOSE_OBJ)) throw notJson(`unexpected "${String.fromCharCode(d)}" at byte ${i}`);
      commas.pop();
      if (objects.length === 0) return i + 1;
      expectKey = false;
    } else if (d === COMMA) {
      expectKey = objects[objects.length - 1]!;
      // a comma in an array: one more item follows it
      if (!expectKey && ++commas[commas.length - 1]! >= MAX_ARRAY_ITEMS) throw tooMany(path);
    }
  }
  throw notJson('unexpected end of the body');
}

/** Whether a string of `value` (a key or a value, at any depth) holds a surrogate without its pair. */
function holdsLoneSurrogate(value: unknown): boolean {
  // with the u flag a well-formed pair is one code point: only a lone surrogate matches
  if (typeof value === 'string') return /\p{Surrogate}/u.test(value);
  if (Array.isArray(value)) return value.some(holdsLoneSurrogate);
  if (value && typeof value === 'object') return Object.entries(value).some(([k, v]) => holdsLoneSurrogate(k) || holdsLoneSurrogate(v));
  return false;
}

/** Whether the bytes hold `\uD` (either case): the only way a surrogate gets into a UTF-8 JSON text. */
function mayEscapeSurrogate(b: Buffer, start: number, end: number): boolean {
  const slice = b.subarray(start, end);
  return slice.includes('\\ud') || slice.includes('\\uD');
}

/** The value of one piece, `path` naming it in errors. */
function parsePiece(b: Buffer, start: number, end: number, path: string, s: Scan): unknown {
  let value: unknown;
  try {
    value = JSON.parse(b.toString('utf8', start, end));
  } catch (err) {
    throw notJson(`${(err as Error).message} (in ${path})`);
  }
  if (s.forbidden) throw forbiddenKey(forbiddenKeyPath(value, path) ?? path);
  if (mayEscapeSurrogate(b, start, end) && holdsLoneSurrogate(value)) {
    throw new HospitalApiError('ERR_FHIR_INVALID_REQUEST', { detail: `a string holds a lone surrogate escape (\\uD800-\\uDFFF without its pair), which is not Unicode (in ${path})` });
  }
  return value;
}

function* parseArray(b: Buffer, i: number, level: number, path: string, s: Scan): Generator<void, [unknown[], number]> {
  if (level > s.maxDepth) throw tooDeep(s.maxDepth);
  const out: unknown[] = [];
  i = skipWs(b, i + 1);
  if (b[i] === CLOSE_ARR) return [out, i + 1];
  for (let n = 0; ; n++) {
    if (n === MAX_ARRAY_ITEMS && path !== '$.entry') throw tooMany(path);
    const end = scanValue(b, i, level + 1, s, `${path}[${n}]`);
    out.push(parsePiece(b, i, end, `${path}[${n}]`, s));
    yield;
    i = skipWs(b, end);
    if (b[i] === CLOSE_ARR) return [out, i + 1];
    if (b[i] !== COMMA) throw notJson(`expected "," or "]" at byte ${i} (in ${path})`);
    i = skipWs(b, i + 1);
  }
}

function* parseObject(b: Buffer, i: number, s: Scan): Generator<void, [Record<string, unknown>, number]> {
  const out: Record<string, unknown> = {};
  i = skipWs(b, i + 1);
  if (b[i] === CLOSE_OBJ) return [out, i + 1];
  for (;;) {
    if (b[i] !== QUOTE) throw notJson(`expected a member name at byte ${i}`);
    const keyEnd = stringEnd(b, i);
    if (keyEnd < 0) throw notJson(`unterminated string at byte ${i}`);
    const key = parsePiece(b, i, keyEnd, `member name at byte ${i}`, s) as string;
    const path = `$.${key}`;
    if (FORBIDDEN_KEYS.has(key)) throw forbiddenKey(path);
    i = skipWs(b, keyEnd);
    if (b[i] !== COLON) throw notJson(`expected ":" at byte ${i}`);
    i = skipWs(b, i + 1);
    let value: unknown;
    if (b[i] === OPEN_ARR) [value, i] = yield* parseArray(b, i, 2, path, s);
    else {
      const end = scanValue(b, i, 2, s, path);
      value = parsePiece(b, i, end, path, s);
      i = end;
      yield;
    }
    // the key is none of FORBIDDEN_KEYS, so this defines an own property as JSON.parse does
    out[key] = value;
    i = skipWs(b, i);
    if (b[i] === CLOSE_OBJ) return [out, i + 1];
    if (b[i] !== COMMA) throw notJson(`expected "," or "}" at byte ${i}`);
    i = skipWs(b, i + 1);
  }
}

function* parseBody(b: Buffer, maxDepth: number): Generator<void, unknown> {
  const s: Scan = { maxDepth, forbidden: false };
  let i = skipWs(b, 0);
  if (i >= b.length) return undefined; // an empty body is no body
  if (!isUtf8(b)) throw notJson('its bytes are not UTF-8');
  let value: unknown;
  if (b[i] === OPEN_OBJ) [value, i] = yield* parseObject(b, i, s);
  else if (b[i] === OPEN_ARR) [value, i] = yield* parseArray(b, i, 1, '$', s);
  else {
    const end = scanValue(b, i, 1, s, '$');
    value = parsePiece(b, i, end, '$', s);
    i = end;
  }
  i = skipWs(b, i);
  if (i < b.length) throw notJson(`unexpected data after the JSON value at byte ${i}`);
  return value;
}

/**
 * The body's value (undefined when it is empty).
 * @throws ERR_FHIR_INVALID_REQUEST (not JSON), ERR_FHIR_TOO_COMPLEX (deeper than maxDepth), ERR_FHIR_FORBIDDEN_KEY
 */
export async function parseJsonBody(body: Buffer, maxDepth: number, tick?: Tick): Promise<unknown> {
  return body.length < SLICED_BODY_BYTES ? drain(parseBody(body, maxDepth)) : sliced(parseBody(body, maxDepth), tick);
}

/**
 * Reads a JSON file the toolkit itself wrote (install.json, run/state.json,
 * demo files…) and checks it against a JSON Schema (ajv) before anything uses
 * it, so a damaged or hand-edited file is refused with an error naming the
 * file and the field (`ports.api: must be integer, got "abc"`) instead of
 * failing later somewhere else. Schemas are compiled on first use.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type AnySchema, type ErrorObject, type ValidateFunction } from 'ajv';
import { HospitalApiError } from '../errors/index.js';

let ajv: Ajv | null = null;
const compiled = new WeakMap<object, ValidateFunction>();

function validatorFor(schema: AnySchema): ValidateFunction {
  ajv ??= new Ajv({ allErrors: false, strict: true });
  let v = compiled.get(schema as object);
  if (!v) {
    v = ajv.compile(schema);
    compiled.set(schema as object, v);
  }
  return v;
}

/** `ports.api`, `components[2].pid`, or `(top level)`. */
function fieldOf(e: ErrorObject): string {
  const parts = e.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') parts.push(String((e.params as { missingProperty: string }).missingProperty));
  if (e.keyword === 'additionalProperties') parts.push(String((e.params as { additionalProperty: string }).additionalProperty));
  if (parts.length === 0) return '(top level)';
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

function valueAt(doc: unknown, pointer: string): unknown {
  let v: unknown = doc;
  for (const p of pointer.split('/').slice(1)) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[p] : undefined;
  return v;
}

/** Describes the first schema violation of `doc`, or null when it is valid. */
export function schemaProblem(doc: unknown, schema: AnySchema): string | null {
  const validate = validatorFor(schema);
  if (validate(doc)) return null;
  const e = (validate.errors ?? [])[0];
  if (!e) return 'invalid';
  if (e.keyword === 'required') return `${fieldOf(e)} is missing`;
  if (e.keyword === 'additionalProperties') return `${fieldOf(e)} is not a known field`;
  return `${fieldOf(e)}: ${e.message ?? 'is invalid'}, got ${JSON.stringify(valueAt(doc, e.instancePath)) ?? 'nothing'}`;
}

/**
 * Parses and checks a JSON document read from `path`.
 * @throws ERR_FILE_READ naming the file and the field
 */
export function parseJsonFile<T>(path: string, text: string, schema: AnySchema): T {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: `not valid JSON (${(err as Error).message})` }, { cause: err });
  }
  const problem = schemaProblem(doc, schema);
  if (problem) throw new HospitalApiError('ERR_FILE_READ', { path, detail: problem });
  return doc as T;
}

/** Reads, parses and checks `path`. @throws ERR_FILE_READ */
export function readJsonFile<T>(path: string, schema: AnySchema): T {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as NodeJS.ErrnoException).code ?? (err as Error).message }, { cause: err });
  }
  return parseJsonFile<T>(path, text, schema);
}

/**
 * What `fhir load` reads: a `.json` file holding one transaction or batch
 * Bundle, or an NDJSON file whose lines are Bundles (posted as they are) or
 * plain resources (grouped into batch Bundles of 100: PUT Type/id when the
 * resource has an id, else POST with ifNoneExist on its first identifier).
 * Units are yielded lazily so a 10 GB NDJSON never sits in memory.
 */
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { HospitalApiError } from '../../errors/index.js';

export interface LoadUnit {
  /** Stable within a file: the state file records it. */
  index: number;
  /** For messages: `file line 12` or `file`. */
  label: string;
  bundle: { resourceType: 'Bundle'; type: 'transaction' | 'batch'; entry: unknown[] };
  resources: number;
  /** Bytes of the file this unit covers up to (progress). */
  offset: number;
}

export const NDJSON_BATCH = 100;

type Obj = Record<string, unknown>;
const bad = (path: string, detail: string) => new HospitalApiError('ERR_FHIR_LOAD_BAD_FILE', { path, detail });

function asBundle(path: string, where: string, value: unknown): LoadUnit['bundle'] | undefined {
  const v = value as Obj;
  if (v?.resourceType !== 'Bundle') return undefined;
  if (v.type !== 'transaction' && v.type !== 'batch') throw bad(path, `${where}: Bundle type "${String(v.type)}" cannot be loaded (use transaction or batch)`);
  if (!Array.isArray(v.entry)) throw bad(path, `${where}: Bundle has no entry array`);
  return v as LoadUnit['bundle'];
}

function escapeToken(s: string): string {
  return encodeURIComponent(s.replace(/[\\,|$]/g, (c) => `\\${c}`));
}

/** A resource line as a batch entry. */
export function resourceEntry(resource: Obj): Obj {
  const type = resource.resourceType as string;
  if (typeof resource.id === 'string' && resource.id.length > 0) {
    return { resource, request: { method: 'PUT', url: `${type}/${encodeURIComponent(resource.id)}` } };
  }
  const first = Array.isArray(resource.identifier) ? (resource.identifier[0] as Obj | undefined) : undefined;
  const request: Obj = { method: 'POST', url: type };
  if (typeof first?.value === 'string') {
    request.ifNoneExist = `identifier=${escapeToken(typeof first.system === 'string' ? first.system : '')}|${escapeToken(first.value)}`;
  }
  return { resource, request };
}

export function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as Error).message }, { cause: err });
  }
}

/** @throws ERR_FHIR_LOAD_BAD_FILE, ERR_FILE_READ */
export async function* readUnits(path: string): AsyncGenerator<LoadUnit> {
  const size = fileSize(path);
  const stream = createReadStream(path, { encoding: 'utf8' });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  const isJson = path.toLowerCase().endsWith('.json');
  if (isJson) {
    let text = '';
    for await (const line of lines) text += line + '\n';
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw bad(path, `not JSON (${(err as Error).message})`);
    }
    const bundle = asBundle(path, 'file', parsed);
    if (!bundle) throw bad(path, 'a .json file must hold one transaction or batch Bundle');
    yield { index: 0, label: path, bundle, resources: bundle.entry.length, offset: size };
    return;
  }
  let index = 0;
  let lineNo = 0;
  let bytes = 0;
  let pending: Obj[] = [];
  let pendingStart = 0;
  const flush = (): LoadUnit => {
    const unit: LoadUnit = {
      index: index++,
      label: `${path} lines ${pendingStart}-${lineNo}`,
      bundle: { resourceType: 'Bundle', type: 'batch', entry: pending.map(resourceEntry) },
      resources: pending.length,
      offset: bytes,
    };
    pending = [];
    return unit;
  };
  for await (const line of lines) {
    lineNo++;
    bytes += Buffer.byteLength(line) + 1;
    if (line.trim() === '') continue;
    let value: Obj;
    try {
      value = JSON.parse(line) as Obj;
    } catch (err) {
      throw bad(path, `line ${lineNo} is not JSON (${(err as Error).message})`);
    }
    if (typeof value?.resourceType !== 'string') throw bad(path, `line ${lineNo} is not a FHIR resource (no resourceType)`);
    const bundle = asBundle(path, `line ${lineNo}`, value);
    if (bundle) {
      if (pending.length > 0) yield flush();
      yield { index: index++, label: `${path} line ${lineNo}`, bundle, resources: bundle.entry.length, offset: bytes };
      continue;
    }
    if (pending.length === 0) pendingStart = lineNo;
    pending.push(value);
    if (pending.length >= NDJSON_BATCH) yield flush();
  }
  if (pending.length > 0) yield flush();
}

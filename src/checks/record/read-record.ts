/**
 * Reads an acceptance record file back for `record diff`: a regular file of at
 * most MAX_RECORD_BYTES (a device, FIFO or directory is refused before it is
 * read, so `/dev/zero` cannot make it read forever), JSON of the record format
 * whose fields diff reads have the shapes it expects (else a coded error naming
 * the file and the field, never an internal error).
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { resolve } from 'node:path';
import type { AnySchema } from 'ajv';
import { HospitalApiError } from '../../errors/index.js';
import { printable } from '../../output/printable.js';
import { schemaProblem } from '../../util/json-file.js';
import { RECORD_FORMAT, type AcceptanceRecord } from './build.js';

/** Records are a few hundred KiB at most; anything far larger is not one. */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024;

const str = { type: 'string' } as const;
const strOrNull = { type: ['string', 'null'] } as const;
const strings = { type: 'array', items: str } as const;
/** A list of objects (null or absent: empty) whose `required` fields must be there with these shapes. */
const list = (required: Record<string, object>, optional: Record<string, object> = {}): AnySchema => ({
  type: ['array', 'null'],
  items: { type: 'object', required: Object.keys(required), properties: { ...required, ...optional } },
});

/** What diff.ts reads of a record, and nothing more (other fields are the signature's business). */
const SCHEMA: AnySchema = {
  type: 'object',
  required: ['result'],
  properties: {
    result: str,
    toolkitVersion: strOrNull,
    runtime: strOrNull,
    gatewayConfigSha256: strOrNull,
    gateway: { type: ['object', 'null'], properties: { certificate: { type: ['object', 'null'], properties: { fingerprint256: strOrNull } } } },
    checks: list({ id: str, status: str, summary: str }),
    gatewayRoutes: list({ route: str, service: str, via: str, open: { type: 'boolean' }, guards: strings, protocols: strings }),
    gatewayUndeclared: list({ kind: str, name: str, detail: str }),
    versions: list({ name: str, version: str }, { digest: strOrNull }),
  },
};

function kindOf(stat: Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isSocket()) return 'a socket';
  return 'not a regular file';
}

const tooLarge = (file: string): HospitalApiError =>
  new HospitalApiError('ERR_INSTALL_RECORD_FORMAT', { path: file, detail: `larger than ${MAX_RECORD_BYTES / 1024 / 1024} MiB, no record is` });

/** The bytes of a regular file of at most MAX_RECORD_BYTES; checked on the open descriptor, before reading. */
function readBounded(file: string): Buffer {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it has no effect on a regular file.
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path: file, detail: (err as NodeJS.ErrnoException).code ?? String(err) }, { cause: err });
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new HospitalApiError('ERR_INSTALL_RECORD_FORMAT', { path: file, detail: `${kindOf(stat)}, not a regular file` });
    if (stat.size > MAX_RECORD_BYTES) throw tooLarge(file);
    // Counted while read: a file that grew since fstat is refused too.
    const chunks: Buffer[] = [];
    const chunk = Buffer.alloc(64 * 1024);
    let total = 0;
    for (let n = readSync(fd, chunk, 0, chunk.length, null); n > 0; n = readSync(fd, chunk, 0, chunk.length, null)) {
      total += n;
      if (total > MAX_RECORD_BYTES) throw tooLarge(file);
      chunks.push(Buffer.from(chunk.subarray(0, n)));
    }
    return Buffer.concat(chunks, total);
  } catch (err) {
    if (err instanceof HospitalApiError) throw err;
    throw new HospitalApiError('ERR_FILE_READ', { path: file, detail: (err as NodeJS.ErrnoException).code ?? String(err) }, { cause: err });
  } finally {
    closeSync(fd);
  }
}

/** @throws ERR_FILE_READ, ERR_INSTALL_RECORD_FORMAT */
export function readRecord(path: string): AcceptanceRecord {
  const file = resolve(path);
  const text = readBounded(file).toString('utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new HospitalApiError('ERR_INSTALL_RECORD_FORMAT', { path: file, detail: 'not JSON' });
  }
  const format = (doc as { format?: unknown } | null)?.format;
  if (format !== RECORD_FORMAT) throw new HospitalApiError('ERR_INSTALL_RECORD_FORMAT', { path: file, detail: `format is ${cut(JSON.stringify(format ?? null))}, not ${RECORD_FORMAT}` });
  const problem = schemaProblem(doc, SCHEMA);
  if (problem) throw new HospitalApiError('ERR_INSTALL_RECORD_FORMAT', { path: file, detail: cut(problem) });
  return doc as AcceptanceRecord;
}

/** A value quoted from the file, short and printable: it ends up in an error line on a terminal. */
function cut(text: string): string {
  const safe = printable(text);
  return safe.length > 200 ? `${safe.slice(0, 200)}…` : safe;
}

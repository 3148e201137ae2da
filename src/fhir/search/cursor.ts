/** Opaque keyset cursors: the sort values and rid of the last row of a page, base64url JSON. */
import { HospitalApiError } from '../../errors/index.js';

export function encodeCursor(values: unknown[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/** The cursor's values, each checked to be what SQLite binds (null, a string or a number). */
export function decodeCursor(cursor: string, sortKeys: number): Array<string | number | null> {
  try {
    const values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    const ok =
      Array.isArray(values) &&
      values.length === sortKeys + 1 &&
      Number.isInteger(values[values.length - 1]) &&
      values.every((v) => v === null || typeof v === 'string' || typeof v === 'number');
    if (ok) return values as Array<string | number | null>;
  } catch {
    // fall through to the coded error
  }
  throw new HospitalApiError('ERR_FHIR_INVALID_SEARCH', { name: '_cursor', detail: 'not a cursor this server issued for this search' });
}

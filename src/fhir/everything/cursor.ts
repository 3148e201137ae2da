/**
 * The opaque `_cursor` of $everything next links. Two phases: `c` walks the
 * Patient compartment by the store's keyset key; `r` walks the referenced
 * (non-compartment) resources sorted by `Type/id`. The phases never overlap, and
 * each is a keyset walk, so no resource is sent twice across pages.
 * A fingerprint of the filters binds a cursor to the query that made it.
 */
import { createHash } from 'node:crypto';
import { HospitalApiError } from '../../errors/index.js';

export interface Cursor {
  phase: 'c' | 'r';
  /** Store key (phase c) or the last `Type/id` sent (phase r). */
  key: string;
}

export function fingerprint(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 12);
}

export function encodeCursor(cursor: Cursor, fp: string): string {
  return Buffer.from(JSON.stringify([1, cursor.phase, cursor.key, fp])).toString('base64url');
}

/** @throws ERR_FHIR_EVERYTHING_BAD_CURSOR */
export function decodeCursor(text: string, fp: string): Cursor {
  const bad = () => new HospitalApiError('ERR_FHIR_EVERYTHING_BAD_CURSOR');
  if (!/^[A-Za-z0-9_-]{1,2000}$/.test(text)) throw bad();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parsed) || parsed.length !== 4) throw bad();
  const [v, phase, key, f] = parsed as unknown[];
  if (v !== 1 || (phase !== 'c' && phase !== 'r') || typeof key !== 'string' || f !== fp) throw bad();
  return { phase, key };
}

/**
 * Backup of the native FHIR store while it serves (issue 15), through SQLite's
 * online backup API (node:sqlite's `backup()`, https://www.sqlite.org/backup.html):
 * a second connection copies the database page by page and restarts when a
 * writer changes a page it has copied, so the copy is one consistent snapshot
 * and the server never stops. Also the check a restore runs on a copied store.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { backup } from 'node:sqlite';
import { openDatabase, pragmaValue, queryValue } from './sqlite.js';

/** The store's file in the data directory (openFhirStore in sqlite-store.ts). */
export const FHIR_STORE_FILE = 'fhir.sqlite';

export interface StoreFacts {
  /** PRAGMA user_version: the store schema version (schema.ts SCHEMA_VERSION). */
  schemaVersion: number;
  /** Current (not deleted) resources. */
  resources: number;
}

/** Copies `<dataDir>/fhir.sqlite` to `dest` (a new file) while the FHIR server may be writing. */
export async function backupFhirStore(dataDir: string, dest: string, progress?: (done: number, total: number) => void): Promise<StoreFacts> {
  const source = join(dataDir, FHIR_STORE_FILE);
  const db = openDatabase(source, { mustExist: true, timeoutMs: 10_000 });
  try {
    await backup(db, dest, {
      rate: 2000, // pages per step; the server's writers run between steps
      progress: ({ totalPages, remainingPages }) => progress?.(totalPages - remainingPages, totalPages),
    });
  } finally {
    db.close();
  }
  // One self-contained file (rollback journal, no -wal/-shm beside it); the server sets WAL again on open.
  const copy = openDatabase(dest, { mustExist: true });
  try {
    copy.exec('PRAGMA journal_mode = DELETE');
  } finally {
    copy.close();
  }
  return inspectFhirStore(dest);
}

/** Opens a store file (a copy: nothing is written to it) and checks it: integrity, schema version, resource count. @throws when damaged */
export function inspectFhirStore(file: string): StoreFacts {
  if (!existsSync(file)) throw new Error(`${file} does not exist`);
  const db = openDatabase(file, { mustExist: true });
  try {
    const integrity = pragmaValue<string>(db, 'quick_check');
    if (integrity !== 'ok') throw new Error(`SQLite quick_check: ${integrity}`);
    const schemaVersion = pragmaValue<number>(db, 'user_version');
    const resources = queryValue<number>(db, 'SELECT count(*) FROM resource WHERE deleted = 0') ?? 0;
    return { schemaVersion, resources };
  } finally {
    db.close();
  }
}

/**
 * The SQLite schema: one file, WAL. `resource` holds the current version of each
 * resource (rid = stable internal key, the keyset-paging order), `history` the
 * earlier versions, and one index table per search-parameter type keyed by `pid` (one id
 * per resource type + parameter code) so every lookup is an index seek. Index
 * tables are WITHOUT ROWID with the lookup key as primary key: one B-tree insert
 * per row (no rid index: an update deletes the old rows by re-extracting them
 * from the old version). A token without system stores system ''.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { HospitalApiError } from '../../errors/index.js';
import { inTransaction, pragmaValue, queryValue, type Database } from './sqlite.js';

export const SCHEMA_VERSION = 3;
/** Bump when index-rows.ts extracts differently: stores indexed by an older extraction are reindexed on open. */
const INDEX_FORMAT = 2; // 2: a parameter keeps no row that a parameter whose rows it shares holds (ParamDef.shares, indexer.ts)

const DDL = `
CREATE TABLE IF NOT EXISTS resource (
  rid INTEGER PRIMARY KEY,
  type TEXT NOT NULL,
  id TEXT NOT NULL,
  version INTEGER NOT NULL,
  last_updated TEXT NOT NULL,
  deleted INTEGER NOT NULL DEFAULT 0,
  content TEXT,
  UNIQUE (type, id)
);
CREATE INDEX IF NOT EXISTS resource_type ON resource (type);
CREATE INDEX IF NOT EXISTS resource_type_updated ON resource (type, last_updated);
CREATE TABLE IF NOT EXISTS history (
  rid INTEGER NOT NULL,
  version INTEGER NOT NULL,
  last_updated TEXT NOT NULL,
  deleted INTEGER NOT NULL,
  content TEXT,
  PRIMARY KEY (rid, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS param (pid INTEGER PRIMARY KEY, type TEXT NOT NULL, code TEXT NOT NULL, UNIQUE (type, code));
CREATE TABLE IF NOT EXISTS sp_token (pid INTEGER NOT NULL, value TEXT NOT NULL, system TEXT NOT NULL, rid INTEGER NOT NULL,
  PRIMARY KEY (pid, value, system, rid)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sp_string (pid INTEGER NOT NULL, value TEXT NOT NULL, rid INTEGER NOT NULL,
  PRIMARY KEY (pid, value, rid)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sp_ref (pid INTEGER NOT NULL, target_id TEXT NOT NULL, target_type TEXT NOT NULL, rid INTEGER NOT NULL,
  PRIMARY KEY (pid, target_id, target_type, rid)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sp_date (pid INTEGER NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL, rid INTEGER NOT NULL,
  PRIMARY KEY (pid, lo, hi, rid)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sp_date_hi ON sp_date (pid, hi);
CREATE TABLE IF NOT EXISTS sp_number (pid INTEGER NOT NULL, value REAL NOT NULL, rid INTEGER NOT NULL,
  PRIMARY KEY (pid, value, rid)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS compartment (patient_id TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (patient_id, rid)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`;

const INDEX_TABLES = ['sp_token', 'sp_string', 'sp_ref', 'sp_date', 'sp_number', 'compartment'];

/**
 * Migrations from each earlier schema version to the next, run in order inside ONE transaction with the
 * final user_version, so an interrupted upgrade rolls back whole (SQLite's journal) and is retried on the
 * next open: a store is never half-migrated. Index tables need no data migration: they are rebuilt from
 * the stored resources whenever the index fingerprint differs (see indexFingerprint).
 */
const MIGRATIONS: Record<number, (db: Database) => void> = {
  // 1 → 2: index tables became WITHOUT ROWID with a NOT NULL system; drop them (DDL recreates, reindex refills)
  1: (db) => {
    for (const t of INDEX_TABLES) db.exec(`DROP TABLE IF EXISTS ${t}`);
  },
  // 2 → 3: `history` holds only the versions before the current one (the current lives in `resource`)
  2: (db) => {
    db.exec('DELETE FROM history WHERE EXISTS (SELECT 1 FROM resource r WHERE r.rid = history.rid AND r.version = history.version)');
  },
};

/** Whether this toolkit opens a store of schema `version` (itself, or an older one it migrates on open). */
export function canOpenSchema(version: number): boolean {
  if (version === 0 || version === SCHEMA_VERSION) return true;
  if (!Number.isInteger(version) || version < 1 || version > SCHEMA_VERSION) return false;
  for (let v = version; v < SCHEMA_VERSION; v++) if (!MIGRATIONS[v]) return false;
  return true;
}

/**
 * What the index tables were built from: the search parameter definitions, the Patient CompartmentDefinition
 * and the extraction format. A toolkit whose definitions differ reindexes the store on open.
 */
export function indexFingerprint(): string {
  const h = createHash('sha256');
  h.update(`index-format:${INDEX_FORMAT}\n`);
  h.update(readFileSync(new URL('../definitions/search-parameters.r4.json', import.meta.url)));
  h.update(readFileSync(new URL('./patient-compartment.json', import.meta.url)));
  return h.digest('hex');
}

/** Empties the index tables (the caller refills them from `resource` in the same transaction). */
export function clearIndexTables(db: Database): void {
  for (const t of INDEX_TABLES) db.exec(`DELETE FROM ${t}`);
}

export function storedFingerprint(db: Database): string | undefined {
  return queryValue<string>(db, "SELECT value FROM store_meta WHERE key = 'index'");
}

export function setFingerprint(db: Database, value: string): void {
  db.prepare("INSERT INTO store_meta (key, value) VALUES ('index', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value").run(value);
}


/** Sets the pragmas, creates or migrates the schema; returns true when the index must be rebuilt. */
export function applySchema(db: Database, synchronous: 'full' | 'normal' = 'full'): boolean {
  // WAL + synchronous=FULL (default): COMMIT returns after the WAL is synced to disk, so a committed
  // clinical write survives a power cut or OS crash. NORMAL (by flag, for bulk loads) returns once the
  // frames are written to the WAL file: kill -9 still loses nothing committed, but a power cut may
  // lose the last commits (never corrupts). https://www.sqlite.org/pragma.html#pragma_synchronous;
  // docs/fhir.md has the measured cost.
  db.exec('PRAGMA journal_mode = WAL');
  db.exec(`PRAGMA synchronous = ${synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
  // checkpoint every ~40 MB of WAL instead of 4 MB: fewer, larger copies into the main file
  db.exec('PRAGMA wal_autocheckpoint = 10000');
  db.exec('PRAGMA foreign_keys = OFF');
  db.exec('PRAGMA cache_size = -65536');
  db.exec('PRAGMA temp_store = MEMORY');
  const version = pragmaValue<number>(db, 'user_version');
  if (version > SCHEMA_VERSION) {
    throw new HospitalApiError('ERR_FHIR_STORE_VERSION', { version, supported: SCHEMA_VERSION });
  }
  const fresh = version === 0 && queryValue<number>(db, "SELECT count(*) FROM sqlite_master WHERE name = 'resource'") === 0;
  inTransaction(db, () => {
    if (!fresh) for (let v = version; v < SCHEMA_VERSION; v++) MIGRATIONS[v]?.(db);
    db.exec(DDL);
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    // A new store, or a version-3 store from before fingerprints (indexed with these same definitions:
    // the extract has not changed since schema 3): record the fingerprint, nothing to rebuild.
    if (fresh || (version === SCHEMA_VERSION && storedFingerprint(db) === undefined)) setFingerprint(db, indexFingerprint());
  });
  return storedFingerprint(db) !== indexFingerprint();
}

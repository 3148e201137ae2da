/**
 * The SQLite schema: one file, WAL. `resource` holds the current version of each
 * resource (rid = stable internal key, the keyset-paging order), `history` the
 * earlier versions, and one index table per search-parameter type keyed by `pid` (one id
 * per resource type + parameter code) so every lookup is an index seek. Index
 * tables are WITHOUT ROWID with the lookup key as primary key: one B-tree insert
 * per row (no rid index: an update deletes the old rows by re-extracting them
 * from the old version). A token without system stores system ''.
 */
import type Database from 'better-sqlite3';

export const SCHEMA_VERSION = 3;

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
`;


export function applySchema(db: Database.Database, synchronous: 'full' | 'normal' = 'full'): void {
  // WAL + synchronous=FULL (default): COMMIT returns after the WAL is synced to disk, so a committed
  // clinical write survives a power cut or OS crash. NORMAL (by flag, for bulk loads) returns once the
  // frames are written to the WAL file: kill -9 still loses nothing committed, but a power cut may
  // lose the last commits (never corrupts). https://www.sqlite.org/pragma.html#pragma_synchronous;
  // docs/fhir.md has the measured cost.
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
  // checkpoint every ~40 MB of WAL instead of 4 MB: fewer, larger copies into the main file
  db.pragma('wal_autocheckpoint = 10000');
  db.pragma('foreign_keys = OFF');
  db.pragma('cache_size = -65536');
  db.pragma('temp_store = MEMORY');
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version !== 0 && version !== SCHEMA_VERSION) {
    throw new Error(`the store has schema version ${version}; this server reads version ${SCHEMA_VERSION}`);
  }
  db.exec(DDL);
  db.pragma(`user_version = ${SCHEMA_VERSION}`);
}

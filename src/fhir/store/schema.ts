/**
 * The SQLite schema: one file, WAL. `resource` holds the current version of each
 * resource (rid = stable internal key, the keyset-paging order), `history` every
 * version, and one index table per search-parameter type keyed by `pid` (one id
 * per resource type + parameter code) so every lookup is an index seek.
 */
import type Database from 'better-sqlite3';

export const SCHEMA_VERSION = 1;

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
CREATE TABLE IF NOT EXISTS sp_token (pid INTEGER NOT NULL, value TEXT NOT NULL, system TEXT, rid INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sp_token_lookup ON sp_token (pid, value, system);
CREATE INDEX IF NOT EXISTS sp_token_rid ON sp_token (rid);
CREATE TABLE IF NOT EXISTS sp_string (pid INTEGER NOT NULL, value TEXT NOT NULL, rid INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sp_string_lookup ON sp_string (pid, value);
CREATE INDEX IF NOT EXISTS sp_string_rid ON sp_string (rid);
CREATE TABLE IF NOT EXISTS sp_ref (pid INTEGER NOT NULL, target_id TEXT NOT NULL, target_type TEXT NOT NULL, rid INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sp_ref_lookup ON sp_ref (pid, target_id, target_type);
CREATE INDEX IF NOT EXISTS sp_ref_rid ON sp_ref (rid);
CREATE TABLE IF NOT EXISTS sp_date (pid INTEGER NOT NULL, lo INTEGER NOT NULL, hi INTEGER NOT NULL, rid INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sp_date_lo ON sp_date (pid, lo);
CREATE INDEX IF NOT EXISTS sp_date_hi ON sp_date (pid, hi);
CREATE INDEX IF NOT EXISTS sp_date_rid ON sp_date (rid);
CREATE TABLE IF NOT EXISTS sp_number (pid INTEGER NOT NULL, value REAL NOT NULL, rid INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sp_number_lookup ON sp_number (pid, value);
CREATE INDEX IF NOT EXISTS sp_number_rid ON sp_number (rid);
CREATE TABLE IF NOT EXISTS compartment (patient_id TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY (patient_id, rid)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS compartment_rid ON compartment (rid);
`;

export const INDEX_TABLES = ['sp_token', 'sp_string', 'sp_ref', 'sp_date', 'sp_number', 'compartment'] as const;

export function applySchema(db: Database.Database): void {
  // WAL + synchronous=FULL: a commit returns only after its WAL frames are fsynced, so neither
  // kill -9 nor a power cut loses a committed transaction; an interrupted one is rolled back on open.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = OFF');
  db.pragma('cache_size = -65536');
  db.pragma('temp_store = MEMORY');
  db.exec(DDL);
  db.pragma(`user_version = ${SCHEMA_VERSION}`);
}

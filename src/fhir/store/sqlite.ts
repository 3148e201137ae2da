/**
 * SQLite through Node's own binding, node:sqlite (https://nodejs.org/api/sqlite.html; in Node since
 * 22.5, every call used here since 22.16): no native addon to compile at install time, so `npm ci`
 * needs no compiler, no prebuilt download and no headers matching the Node that runs it (the pinned
 * runtime of package.json), and the package ships no addon of its own.
 *
 * The few things the store needs beyond node:sqlite's statements live here: one-column reads,
 * pragmas, and transactions (BEGIN IMMEDIATE at the top, a SAVEPOINT when nested, as SQLite's
 * documentation of SAVEPOINT describes: https://www.sqlite.org/lang_savepoint.html).
 */
import { existsSync } from 'node:fs';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';

export type Database = DatabaseSync;
export type Statement = StatementSync;
export type SqlValue = SQLInputValue;

export interface OpenOptions {
  /** Refuse a file that does not exist instead of creating it. */
  mustExist?: boolean;
  readOnly?: boolean;
  /** SQLite's busy time-out, in milliseconds. */
  timeoutMs?: number;
}

export function openDatabase(file: string, options: OpenOptions = {}): Database {
  if ((options.mustExist || options.readOnly) && !existsSync(file)) throw new Error(`${file} does not exist`);
  return new DatabaseSync(file, {
    readOnly: options.readOnly ?? false,
    // the schema declares no foreign keys; say so rather than rely on the binding's default (on)
    enableForeignKeyConstraints: false,
    ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
  });
}

/** A statement that returns each row's first column alone (better-sqlite3 called this pluck). */
export function columnStatement(db: Database, sql: string): Statement {
  const st = db.prepare(sql);
  st.setReturnArrays(true);
  return st;
}

/** Every row's first column. `st` comes from columnStatement. */
export function columnAll<T>(st: Statement, ...args: SqlValue[]): T[] {
  const rows = st.all(...args) as unknown as unknown[][];
  const out = new Array<T>(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = rows[i]![0] as T;
  return out;
}

/** The first row's first column, or undefined. `st` comes from columnStatement. */
export function columnGet<T>(st: Statement, ...args: SqlValue[]): T | undefined {
  const row = st.get(...args) as unknown as unknown[] | undefined;
  return row === undefined ? undefined : (row[0] as T);
}

/** A one-off query's single value (the first row's first column), or undefined: prepared, run once, dropped. */
export function queryValue<T = unknown>(db: Database, sql: string, ...args: SqlValue[]): T | undefined {
  return columnGet<T>(columnStatement(db, sql), ...args);
}

/** A pragma's value (its first column). `name` is a constant of the caller's, never input. */
export function pragmaValue<T = unknown>(db: Database, name: string): T {
  return queryValue<T>(db, `PRAGMA ${name}`) as T;
}

const SAVEPOINT = 'hospital_api_nested';

/**
 * Runs `fn` in a transaction: BEGIN IMMEDIATE (one writer, no read-to-write upgrade deadlock) or
 * plain BEGIN at the top; inside an open transaction a SAVEPOINT, so a failed inner call undoes only
 * itself. Commits when `fn` returns, rolls back when it throws.
 */
export function inTransaction<T>(db: Database, fn: () => T, begin: 'immediate' | 'deferred' = 'immediate'): T {
  if (db.isTransaction) {
    db.exec(`SAVEPOINT ${SAVEPOINT}`);
    try {
      const result = fn();
      db.exec(`RELEASE ${SAVEPOINT}`);
      return result;
    } catch (err) {
      db.exec(`ROLLBACK TO ${SAVEPOINT}`);
      db.exec(`RELEASE ${SAVEPOINT}`);
      throw err;
    }
  }
  db.exec(begin === 'immediate' ? 'BEGIN IMMEDIATE' : 'BEGIN');
  try {
    const result = fn();
    db.exec('COMMIT');
    return result;
  } catch (err) {
    // a failed COMMIT (disk full) may already have ended the transaction
    if (db.isTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

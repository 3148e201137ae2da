// The stand-ins keep their state in their own Postgres database, as Kong and
// HAPI do, so `down` / `up` keeps data exactly as with the real images: one
// row per name in standin_blob, its data base64, and a serial that goes up by
// one with every write (how a replica tells that another one wrote, without
// comparing blobs). psql is the client (no npm in the stand-ins): a one-shot
// `psql` per statement, or a PgSession, one psql kept open, for what must hold
// a session (an advisory lock) or run fenced by one.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * libpq's settings for a connection (the password never on a command line); `conn.ssl` ({ mode,
 * rootCert }) as PGSSLMODE and PGSSLROOTCERT, libpq's default (prefer) without it.
 */
function pgEnv(conn, extra = {}) {
  const ssl = conn.ssl ? { PGSSLMODE: conn.ssl.mode, ...(conn.ssl.rootCert ? { PGSSLROOTCERT: conn.ssl.rootCert } : {}) } : {};
  return { ...process.env, PGHOST: conn.host, PGPORT: String(conn.port), PGUSER: conn.user, PGPASSWORD: conn.password, PGDATABASE: conn.database, PGCONNECT_TIMEOUT: '5', ...ssl, ...extra };
}
const PSQL_ARGS = ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1'];

export function psql(conn, sql) {
  // SQL on stdin: a state blob can exceed one argument's size limit
  return execFileSync('psql', [...PSQL_ARGS, '-f', '-'], {
    env: pgEnv(conn),
    input: sql,
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** psql without blocking the event loop (a stand-in that also serves HTTP). */
export function psqlAsync(conn, sql) {
  return new Promise((resolve, reject) => {
    const child = spawn('psql', [...PSQL_ARGS, '-f', '-'], { env: pgEnv(conn), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(Object.assign(new Error(`psql exited ${code}: ${err.trim()}`), { stderr: err }))));
    child.stdin.on('error', () => undefined);
    child.stdin.end(sql);
  });
}

/** A name as a SQL literal (the stand-ins' names are fixed words; refuse anything else). */
function lit(name) {
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`bad blob name: ${name}`);
  return `'${name}'`;
}

/**
 * The stand-ins' tables, made in one transaction under a transaction-level
 * advisory lock: replicas starting together would otherwise race on
 * CREATE TABLE IF NOT EXISTS (a duplicate pg_type row). The serial column came
 * with several replicas: it is added to a table an older stand-in made.
 */
export function schemaSql(extra = '') {
  return `BEGIN; SELECT pg_advisory_xact_lock(1751474282); CREATE TABLE IF NOT EXISTS standin_blob (name text PRIMARY KEY, data text NOT NULL); ALTER TABLE standin_blob ADD COLUMN IF NOT EXISTS serial bigint NOT NULL DEFAULT 0; ${extra} COMMIT;`;
}

export function restoreBlob(conn, name, file) {
  psql(conn, schemaSql());
  const b64 = psql(conn, `SELECT data FROM standin_blob WHERE name = ${lit(name)}`).trim();
  if (b64) writeFileSync(file, Buffer.from(b64, 'base64'), { mode: 0o600 });
  return Boolean(b64);
}

/** Upsert of a whole blob, its serial one up: the SQL, for psql or a PgSession. base64 has no quote: safe inside a literal. */
export function saveBlobSql(name, bytes) {
  return `INSERT INTO standin_blob (name, data, serial) VALUES (${lit(name)}, '${bytes.toString('base64')}', 1) ON CONFLICT (name) DO UPDATE SET data = EXCLUDED.data, serial = standin_blob.serial + 1 RETURNING serial;`;
}

export function saveBlob(conn, name, file) {
  if (!existsSync(file)) return;
  psql(conn, saveBlobSql(name, readFileSync(file)));
}

/** { serial, data: Buffer } of a blob newer than `after` (a serial), or null when there is none or it is not newer. */
export async function readBlobAfter(conn, name, after) {
  const out = (await psqlAsync(conn, `SELECT serial || ' ' || data FROM standin_blob WHERE name = ${lit(name)} AND serial > ${Number(after)}`)).trim();
  if (!out) return null;
  const space = out.indexOf(' ');
  return { serial: Number(out.slice(0, space)), data: Buffer.from(out.slice(space + 1), 'base64') };
}

/** The blob's serial now (-1: no row yet). */
export async function blobSerial(conn, name) {
  const out = (await psqlAsync(conn, `SELECT serial FROM standin_blob WHERE name = ${lit(name)}`)).trim();
  return out === '' ? -1 : Number(out);
}

/**
 * Writes `bytes` as the blob's next version only if its serial is still `base`
 * (-1: no row yet): compare-and-set, so a write made on top of an older version
 * never replaces a newer one. Returns the new serial, or null when `base` was stale.
 */
export async function saveBlobIf(conn, name, bytes, base) {
  const data = bytes.toString('base64');
  const sql =
    base < 0
      ? `INSERT INTO standin_blob (name, data, serial) VALUES (${lit(name)}, '${data}', 1) ON CONFLICT (name) DO NOTHING RETURNING serial`
      : `UPDATE standin_blob SET data = '${data}', serial = serial + 1 WHERE name = ${lit(name)} AND serial = ${Number(base)} RETURNING serial`;
  const out = (await psqlAsync(conn, sql)).trim();
  return out === '' ? null : Number(out);
}

/**
 * One psql process kept open: its session holds advisory locks, and statements
 * sent through it run on that session (so a write fenced by the lock cannot
 * happen once the lock is gone: the session that held it is gone too). With
 * ON_ERROR_STOP, a failed statement ends psql, and every pending and later
 * query rejects; `closed` resolves then. TCP keepalives on both ends (libpq's
 * keepalives_*; the server's tcp_keepalives_*, user-settable per session: the
 * PostgreSQL 15 manual, 20.3.1 "Connection Settings") make Postgres drop the
 * session, and release its locks, within seconds when the peer vanishes with
 * its host, not after the kernel's two hours.
 */
export class PgSession {
  constructor(conn) {
    this.queue = [];
    this.buffer = '';
    this.serial = 0;
    this.dead = null;
    const keepalive = 'keepalives=1 keepalives_idle=3 keepalives_interval=1 keepalives_count=3';
    this.child = spawn('psql', [...PSQL_ARGS, '-d', keepalive, '-f', '-'], {
      env: pgEnv(conn, { PGOPTIONS: '-c tcp_keepalives_idle=3 -c tcp_keepalives_interval=1 -c tcp_keepalives_count=3' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let err = '';
    this.child.stderr.setEncoding('utf8').on('data', (d) => (err += d));
    this.child.stdout.setEncoding('utf8').on('data', (d) => this.onData(d));
    this.child.stdin.on('error', () => undefined);
    this.closed = new Promise((resolve) => {
      const end = (why) => {
        if (this.dead) return;
        this.dead = new Error(`psql session ended: ${why}${err.trim() ? `: ${err.trim()}` : ''}`);
        for (const q of this.queue.splice(0)) q.reject(this.dead);
        resolve(this.dead);
      };
      this.child.on('error', (e) => end(e.message));
      this.child.on('close', (code, signal) => end(signal ?? `exit ${code}`));
    });
  }

  onData(d) {
    this.buffer += d;
    for (;;) {
      const head = this.queue[0];
      if (!head) return;
      const at = this.buffer.indexOf(head.marker);
      if (at < 0) return;
      const out = this.buffer.slice(0, at);
      this.buffer = this.buffer.slice(at + head.marker.length);
      this.queue.shift();
      head.resolve(out);
    }
  }

  /** Runs `sql` on the session; resolves with its output (trimmed). */
  query(sql) {
    if (this.dead) return Promise.reject(this.dead);
    const marker = `__standin_done_${++this.serial}__\n`;
    return new Promise((resolve, reject) => {
      this.queue.push({ marker, resolve: (out) => resolve(out.trim()), reject });
      this.child.stdin.write(`${sql.trimEnd().replace(/;?$/, ';')}\n\\echo ${marker.trim()}\n`);
    });
  }

  close() {
    this.child.stdin.end();
    return this.closed;
  }
}

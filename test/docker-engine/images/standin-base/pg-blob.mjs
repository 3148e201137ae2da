// The stand-ins keep their state in their own Postgres database, as Kong and
// HAPI do, so `down` / `up` keeps data exactly as with the real images: one
// bytea row per name, read at start and written back at a clean stop.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

export function psql(conn, sql) {
  // SQL on stdin: a state blob can exceed one argument's size limit
  return execFileSync('psql', ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-f', '-'], {
    env: { ...process.env, PGHOST: conn.host, PGPORT: String(conn.port), PGUSER: conn.user, PGPASSWORD: conn.password, PGDATABASE: conn.database, PGCONNECT_TIMEOUT: '5' },
    input: sql,
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

const TABLE = 'CREATE TABLE IF NOT EXISTS standin_blob (name text PRIMARY KEY, data text NOT NULL)';

export function restoreBlob(conn, name, file) {
  psql(conn, TABLE);
  const b64 = psql(conn, `SELECT data FROM standin_blob WHERE name = '${name}'`).trim();
  if (b64) writeFileSync(file, Buffer.from(b64, 'base64'), { mode: 0o600 });
  return Boolean(b64);
}

export function saveBlob(conn, name, file) {
  if (!existsSync(file)) return;
  const b64 = readFileSync(file).toString('base64');
  // base64 has no quote characters: safe inside a SQL literal
  psql(conn, `INSERT INTO standin_blob (name, data) VALUES ('${name}', '${b64}') ON CONFLICT (name) DO UPDATE SET data = EXCLUDED.data`);
}

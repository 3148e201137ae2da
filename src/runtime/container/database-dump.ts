/**
 * The databases of the container runtimes (docker compose, Docker Swarm) as backup parts:
 * pg_dump streamed out of a database container into a 0600 file, and an archive streamed back
 * into pg_restore in one transaction. Every command is an argv (execa, no shell), so no value
 * from a file or a flag is ever interpreted (the one shell line, SIZED_STDIN_SCRIPT, takes its
 * values as positional parameters). Each runtime says which container to run them in
 * (docker/day-two.ts, swarm/day-two.ts).
 */
import { closeSync, createReadStream, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { HospitalApiError } from '../../errors/index.js';
import type { DataPart } from '../types.js';

/** One database of templates/compose.yaml and the part its dump becomes. */
export interface DatabasePart {
  service: 'hapi-database' | 'kong-database';
  user: string;
  database: string;
  path: string;
  kind: Extract<DataPart['kind'], 'fhir-database' | 'gateway-database'>;
  label: string;
}

/** Users and databases as templates/compose.yaml creates them (POSTGRES_USER / POSTGRES_DB). */
export const DATABASE_PARTS: readonly DatabasePart[] = Object.freeze([
  { service: 'hapi-database', user: 'hapi', database: 'hapi', path: 'postgres/hapi.dump', kind: 'fhir-database', label: "HAPI FHIR's database" },
  { service: 'kong-database', user: 'kong', database: 'kong', path: 'postgres/kong.dump', kind: 'gateway-database', label: "Kong's database" },
]);

/** The first bytes of a pg_dump custom-format archive (pg_backup_archiver.c). */
export const PG_DUMP_MAGIC = 'PGDMP';

const PROGRESS_EVERY_MS = 5_000;

/** Where a client reaches a database other than over its own container's socket (the swarm runtime's ops task). */
export interface DatabaseAddress {
  host: string;
  port: string;
}

function addressArgs(at: DatabaseAddress | undefined): string[] {
  return at ? ['--host', at.host, '--port', at.port] : [];
}

/**
 * `docker exec <db> pg_dump …`: over the container's unix socket, where the
 * Postgres images trust local connections (initdb --auth-local=trust in
 * docker-library/postgres), so no password is needed or passed. With `at`, from
 * another container over TCP, its libpq reading the password from its PGPASSFILE.
 */
export function pgDumpArgv(container: string, db: Pick<DatabasePart, 'user' | 'database'>, at?: DatabaseAddress): string[] {
  return ['exec', container, 'pg_dump', ...addressArgs(at), '--username', db.user, '--dbname', db.database, '--format', 'custom', '--no-password'];
}

/**
 * The shell line between `docker exec -i` and the command that reads the
 * archive: `head -c` passes exactly the archive's length on, and its exit
 * closes the pipe, so the command sees its end of input even when the
 * engine never passes the close of the exec's stdin along. Docker 20.10 (the
 * engine Debian 12 ships) can lose that close (moby/moby#37870; moby commit
 * 36935bd: "somewhat broken ever since … v17.11"), and pg_restore would then
 * wait forever. Every value stays a positional parameter: nothing in it is
 * parsed by the shell. The pipeline's status is the command's.
 */
export const SIZED_STDIN_SCRIPT = 'n="$1"; shift; head -c "$n" | "$@"';

/**
 * `docker exec -i <db> sh -c SIZED_STDIN_SCRIPT sh <bytes> pg_restore …`, the
 * archive of `bytes` bytes on stdin: one transaction (--single-transaction
 * implies --exit-on-error), objects owned by the database's own user.
 */
export function pgRestoreArgv(container: string, db: Pick<DatabasePart, 'user' | 'database'>, bytes: number, at?: DatabaseAddress): string[] {
  if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`archive length ${bytes}`);
  return ['exec', '-i', container, 'sh', '-c', SIZED_STDIN_SCRIPT, 'sh', String(bytes),
    'pg_restore', ...addressArgs(at), '--username', db.user, '--dbname', db.database, '--single-transaction', '--exit-on-error', '--no-owner', '--no-privileges', '--no-password'];
}

export const dockerFailed = (command: string, detail: string): HospitalApiError => new HospitalApiError('ERR_INSTALL_DOCKER', { command, detail: detail.trim().split('\n').slice(-3).join(' ').slice(0, 400) || 'failed' });

export function mb(bytes: number): string {
  return `${(bytes / 1_048_576).toFixed(1)} MB`;
}

/** Calls `tick` every few seconds while `work` runs. */
export async function withTicks<T>(work: Promise<T>, tick: () => void): Promise<T> {
  const timer = setInterval(tick, PROGRESS_EVERY_MS);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/**
 * Runs a pg_dump argv (pgDumpArgv) into `file`: 0600 before its first byte, checked to be a
 * pg_dump archive, removed again on any failure (no partial dump is left behind).
 */
export async function dumpInto(docker: string, argv: string[], file: string, db: Pick<DatabasePart, 'service' | 'label'>, progress: (text: string) => void): Promise<void> {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const t0 = Date.now();
  // Patient data: the file exists 0600 before the first byte (execa then opens it for writing, which keeps the mode)
  closeSync(openSync(file, 'wx', 0o600));
  try {
    const res = await withTicks(execa(docker, argv, { reject: false, stdin: 'ignore', stdout: { file } }), () => progress(`${db.label}: ${mb(statSync(file).size)} dumped`));
    if (res.exitCode !== 0) throw dockerFailed(`exec ${db.service} pg_dump`, String(res.stderr ?? res.shortMessage ?? ''));
    if (readFileSync(file).subarray(0, PG_DUMP_MAGIC.length).toString('latin1') !== PG_DUMP_MAGIC) {
      throw dockerFailed(`exec ${db.service} pg_dump`, 'the output is not a pg_dump archive');
    }
  } catch (err) {
    rmSync(file, { force: true });
    throw err;
  }
  progress(`${db.label}: ${mb(statSync(file).size)} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/**
 * Streams `file` into the pg_restore argv `restoreArgv(bytes)` makes (pgRestoreArgv, told the
 * file's length), counted for the progress lines; a pg_restore that stops early shows in its exit code.
 */
export async function restoreFrom(docker: string, restoreArgv: (bytes: number) => string[], file: string, db: Pick<DatabasePart, 'service' | 'label'>, progress: (text: string) => void): Promise<void> {
  const size = statSync(file).size;
  const argv = restoreArgv(size);
  const t0 = Date.now();
  const child = execa(docker, argv, { reject: false, stdin: 'pipe', stdout: 'ignore' });
  const input = createReadStream(file);
  let sent = 0;
  input.on('data', (chunk) => (sent += chunk.length));
  input.on('error', (err) => child.kill(err));
  child.stdin?.on('error', () => input.destroy());
  if (child.stdin) input.pipe(child.stdin);
  const res = await withTicks(child, () => progress(`${db.label}: ${mb(sent)} of ${mb(size)} sent`));
  if (res.exitCode !== 0) throw dockerFailed(`exec ${db.service} pg_restore`, String(res.stderr ?? res.shortMessage ?? ''));
  progress(`${db.label}: restored in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/**
 * The database dumps among a restore's parts, each checked to be a pg_dump archive, in the order
 * given. @throws ERR_RESTORE_BAD_ARCHIVE for a part of another runtime or a file that is no dump
 */
export function databasePlan(from: string, parts: DataPart[], runtime: string): Array<{ db: DatabasePart; file: string }> {
  const bad = (detail: string): HospitalApiError => new HospitalApiError('ERR_RESTORE_BAD_ARCHIVE', { file: from, detail });
  const plan: Array<{ db: DatabasePart; file: string }> = [];
  for (const part of parts) {
    const db = DATABASE_PARTS.find((d) => d.kind === part.kind);
    if (!db) throw bad(`a ${part.kind} part (${part.path}) belongs to the native runtime, not to ${runtime}`);
    const file = join(from, part.path);
    if (!existsSync(file) || readFileSync(file).subarray(0, PG_DUMP_MAGIC.length).toString('latin1') !== PG_DUMP_MAGIC) {
      throw bad(`${part.path} is not a pg_dump archive`);
    }
    plan.push({ db, file });
  }
  return plan;
}

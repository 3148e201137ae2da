/**
 * The docker runtime's day-two operations (issue 15), through the containers
 * and Postgres's own tools; every command is an argv (execa, no shell), so no
 * value from a file or a flag is ever interpreted (the one shell line,
 * SIZED_STDIN_SCRIPT, takes its values as positional parameters).
 *
 * - snapshotData: `pg_dump --format=custom` inside each database container,
 *   its stdout streamed to a file (pg_dump reads one snapshot per database:
 *   consistent per part while Kong and HAPI keep serving; PostgreSQL docs, pg_dump).
 * - restoreData: into a fresh install only. The database containers start on
 *   new, empty volumes (their entrypoint creates the role and database), each
 *   archive is streamed, its length announced (SIZED_STDIN_SCRIPT), into
 *   `pg_restore --single-transaction --exit-on-error`
 *   (all or nothing per database), and the databases stop again; kong and hapi
 *   start later with `up`, on restored data (Kong's `migrations bootstrap` is a
 *   no-op on a bootstrapped database). Any failure removes the containers and
 *   the volumes this restore made: nothing is left behind.
 * - reloadApiKey: the settings file the API container reads is rewritten in
 *   its mounted folder (a folder, so the renamed file is visible), then
 *   `docker kill --signal HUP`: PID 1 is docker-init (`init: true`, see
 *   templates/compose.yaml), which passes the signal on to node, and node
 *   rereads FHIR_API_KEY (src/api/fhir/key-reload.ts), writing its answer to a
 *   second mounted folder the CLI reads.
 * - reloadGatewayTls: the certificate files are refreshed in kong's mounted
 *   folder, then `kong reload` inside the container (Kong's documented way to
 *   reload a containerised gateway: developer.konghq.com, "How to restart Kong
 *   Gateway in a Docker container"; nginx starts new workers with the new
 *   certificate, old ones finish their connections).
 */
import { closeSync, createReadStream, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { HospitalApiError } from '../../errors/index.js';
import { awaitReloadStatus } from '../api-reload-status.js';
import { installPaths } from '../../install-dir/layout.js';
import { TLS_RELOADED_IN_PLACE, type ApiKeyReload, type DataPart, type GatewayTlsReload } from '../types.js';
import type { DockerCli } from './compose.js';
import { API_CONTAINER_PATHS, apiReloadStatusFile } from './container-files.js';
import type { ContainerInspect } from './parse.js';

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

export function kongReloadArgv(container: string): string[] {
  return ['exec', container, 'kong', 'reload'];
}

export function apiHupArgv(container: string): string[] {
  return ['kill', '--signal', 'HUP', container];
}

/** What the runtime (index.ts) lends these operations. */
export interface DayTwoContext {
  dir: string;
  project: string;
  /** The docker program. */
  docker: string;
  cli(): Promise<DockerCli>;
  containers(): Promise<Array<ContainerInspect & { Args?: string[] }>>;
  /** Resolves once each service is up (health check passing). */
  waitHealthy(services: string[]): Promise<void>;
  /** Rewrites the files the containers read, owned by the users the images run as (container-files.ts). */
  writeFiles(): Promise<void>;
}

async function runningOf(ctx: DayTwoContext, service: string): Promise<(ContainerInspect & { Args?: string[] }) | null> {
  const list = await ctx.containers();
  return list.find((c) => c.Config?.Labels?.['com.docker.compose.service'] === service && c.State?.Running) ?? null;
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

export async function snapshotDockerData(ctx: DayTwoContext, into: string, progress: (text: string) => void): Promise<DataPart[]> {
  const c = await ctx.cli();
  // A stopped stack is backed up too (upgrade does that): only its databases start, and stop again after.
  const started: string[] = [];
  for (const db of DATABASE_PARTS) if (!(await runningOf(ctx, db.service))) started.push(db.service);
  if (started.length) {
    progress(`starting ${started.join(' and ')} for the dump`);
    await c.compose(['up', '-d', '--no-deps', ...started], { timeoutMs: null });
    await ctx.waitHealthy(started);
  }
  try {
    const parts: DataPart[] = [];
    for (const db of DATABASE_PARTS) {
      const container = await runningOf(ctx, db.service);
      if (!container) throw dockerFailed(`exec ${db.service} pg_dump`, `${db.service} is not running`);
      progress(`${db.label}: pg_dump inside ${db.service} (the stack keeps serving)`);
      await dumpInto(ctx.docker, pgDumpArgv(container.Id, db), join(into, db.path), db, progress);
      parts.push({ path: db.path, kind: db.kind });
    }
    return parts;
  } finally {
    if (started.length) await c.compose(['stop', ...started], { timeoutMs: null, allowFail: true });
  }
}

/** The project's volumes that exist now. */
async function projectVolumes(c: DockerCli, project: string): Promise<string[]> {
  return (await c.run(['volume', 'ls', '-q', '--filter', `label=com.docker.compose.project=${project}`])).stdout
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean);
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

export async function restoreDockerData(ctx: DayTwoContext, from: string, parts: DataPart[], progress: (text: string) => void): Promise<void> {
  const plan = databasePlan(from, parts, 'docker');
  if (plan.length === 0) return;
  const c = await ctx.cli();
  // Never into databases that exist: an empty install directory next to an old project's volumes is not empty.
  const existing = await projectVolumes(c, ctx.project);
  if (existing.length) {
    throw new HospitalApiError('ERR_RESTORE_NOT_EMPTY', {
      dir: installPaths(ctx.dir).root,
      what: `no files, but its docker project already has the volumes ${existing.join(', ')} (remove them with \`docker compose down --volumes\` in ${installPaths(ctx.dir).docker} if their data is not wanted)`,
    });
  }
  const services = plan.map((p) => p.db.service);
  try {
    progress(`starting ${services.join(' and ')} on new volumes`);
    await c.compose(['up', '-d', '--no-deps', ...services], { timeoutMs: null });
    await ctx.waitHealthy(services);
    for (const { db, file } of plan) {
      const container = await runningOf(ctx, db.service);
      if (!container) throw dockerFailed(`exec ${db.service} pg_restore`, `${db.service} is not running`);
      progress(`${db.label}: pg_restore of ${mb(statSync(file).size)} inside ${db.service}`);
      await restoreFrom(ctx.docker, (bytes) => pgRestoreArgv(container.Id, db, bytes), file, db, progress);
    }
    await c.compose(['stop', ...services], { timeoutMs: null });
  } catch (err) {
    // Fail closed: the containers, network and volumes this restore made go again.
    progress('restore failed: removing the containers and volumes it made');
    await c.compose(['down', '--volumes', '--remove-orphans'], { timeoutMs: null, allowFail: true }).catch(() => undefined);
    throw err;
  }
}

export async function reloadDockerApiKey(ctx: DayTwoContext): Promise<ApiKeyReload> {
  const api = await runningOf(ctx, 'hospital-api');
  if (!api) throw new HospitalApiError('ERR_KEY_RELOAD_FAILED', { detail: 'the hospital-api container is not running (`hospital-api up`)' });
  if (!(api.Args ?? []).includes('--reload-status')) {
    // made from a compose file older than key reload: a signal would get no answer
    throw new HospitalApiError('ERR_KEY_RELOAD_FAILED', { detail: `the running API container has no --reload-status (its compose file predates key reload): run \`hospital-api install --dir ${installPaths(ctx.dir).root}\` again to re-render it` });
  }
  // the new FHIR_API_KEY into the folder the container reads (renamed in: a folder mount shows it)
  await ctx.writeFiles();
  const status = apiReloadStatusFile(ctx.dir);
  rmSync(status, { force: true });
  const sent = Date.now();
  const c = await ctx.cli();
  await c.run(apiHupArgv(api.Id));
  // the API's clock is the host's (one kernel); a second's slack for the ISO rounding
  return awaitReloadStatus(status, (s) => Date.parse(s.at) >= sent - 1000, `the API container in ${API_CONTAINER_PATHS.reloadStatus}`);
}

export async function reloadDockerGatewayTls(ctx: DayTwoContext): Promise<GatewayTlsReload> {
  const kong = await runningOf(ctx, 'kong');
  if (!kong) throw new HospitalApiError('ERR_INSTALL_ADMIN_UNREACHABLE', { detail: 'the kong container is not running (`hospital-api up`)' });
  // the renewed certificate and key into kong's mounted folder, then nginx reloads them
  await ctx.writeFiles();
  await (await ctx.cli()).run(kongReloadArgv(kong.Id), { timeoutMs: 120_000 });
  return TLS_RELOADED_IN_PLACE;
}

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
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { awaitReloadStatus } from '../api-reload-status.js';
import { installPaths } from '../../install-dir/layout.js';
import { TLS_RELOADED_IN_PLACE, type ApiKeyReload, type DataPart, type GatewayTlsReload } from '../types.js';
import type { DockerCli } from '../container/compose.js';
import { databasePlan, DATABASE_PARTS, dockerFailed, dumpInto, mb, pgDumpArgv, pgRestoreArgv, restoreFrom } from '../container/database-dump.js';
import { API_CONTAINER_PATHS, apiReloadStatusFile } from './container-files.js';
import type { ContainerInspect } from './parse.js';

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

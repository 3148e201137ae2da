/**
 * The swarm runtime's backup and restore (issue 29), through the stack's `ops` task.
 *
 * The databases may run on any node (their labels), or outside the swarm (--kong-database-url),
 * and a manager's CLI cannot `docker exec` into another node's containers. So the dumps and
 * restores run in `ops`: a task of the postgres image on this node (node label
 * hospital-api.admin, as kong-admin), on the stack's network, whose libpq reads each database's
 * password from its PGPASSFILE (the `pgpass` secret). pg_dump and pg_restore then reach each
 * database by its address (kong-database:5432, or the hospital's server) over TCP, and the
 * archive streams through `docker exec` to or from this host, as on one host (container/database-dump.ts,
 * the dump and restore steps both runtimes share).
 *
 * - snapshotData: pg_dump of each database, one snapshot per database while the stack serves
 *   (PostgreSQL docs, pg_dump). A stack that is not deployed is backed up too: its databases and
 *   ops alone are deployed for the dump and removed again.
 * - restoreData: only into databases that hold nothing (a new install directory is a new stack,
 *   with new volumes; an old stack's volume of the same name, or a server the hospital runs, may
 *   not be empty, and is refused before anything is written). The databases and ops alone are
 *   deployed, each archive goes in with `pg_restore --single-transaction` (all or nothing per
 *   database), and the stack is removed again; `up` then starts everything on the restored data.
 *   When a later database fails, those already restored are emptied again and counted again; one
 *   that cannot be emptied is named (ERR_RESTORE_PARTIAL) rather than passed over.
 */
import { HospitalApiError } from '../../errors/index.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import type { ComponentState, DataPart } from '../types.js';
import { swarmAuditLogElsewhere } from './profile.js';
import { databasePlan, DATABASE_PARTS, dockerFailed, dumpInto, mb, pgDumpArgv, pgRestoreArgv, restoreFrom, type DatabaseAddress, type DatabasePart } from '../container/database-dump.js';
import { join } from 'node:path';
import { statSync } from 'node:fs';
import { databaseEndpoint } from './databases.js';
import { DATABASE_CA_PATH } from './secrets.js';
import { deploy, labelledNodes, runningTaskHere, stackServices, waitGone, waitUp, type SwarmContext } from './deploy.js';
import { STACK_SERVICES, type StackService } from './render.js';

/** What the runtime (index.ts) lends these operations. */
export interface SwarmDayTwo {
  ctx: SwarmContext;
  /** The docker program. */
  docker: string;
  components(): Promise<ComponentState[]>;
  /** The stack's long-running services as install.json asks (a database the hospital runs elsewhere is not one). */
  expected: readonly StackService[];
}

/** A database as the ops task reaches it, with its part of a backup. */
export interface Target {
  db: DatabasePart;
  /** The stack's own database service, not the hospital's server. */
  own: boolean;
  at: DatabaseAddress;
  user: string;
  database: string;
  /**
   * What the clients get as --dbname: the database's name, or for the hospital's server a libpq
   * connection string that also asks for TLS verified against its CA, host name included
   * (PostgreSQL docs, "SSL Support": sslmode=verify-full; a --dbname holding `=` is one).
   */
  dbname: string;
}

/** Where the ops task reaches the database of a backup part: the stack's service or the hospital's server. */
export function targetOf(config: InstallConfig, db: DatabasePart): Target {
  const e = databaseEndpoint(config, db.kind === 'fhir-database' ? 'fhir' : 'kong');
  const dbname = e.own ? e.database : `dbname=${e.database} sslmode=verify-full sslrootcert=${DATABASE_CA_PATH}`;
  return { db, own: e.own, at: { host: e.host, port: e.port }, user: e.user, database: e.database, dbname };
}

function where(t: Target): string {
  return `${t.db.label} (${t.database} at ${t.at.host}:${t.at.port})`;
}

/** Relations in the database outside PostgreSQL's own schemas: 0 in one initdb has just made (or the hospital has just created). */
const OBJECT_COUNT_SQL = "SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'";

/**
 * Empties a database a failed restore had written: Kong's and HAPI's objects are all in `public`
 * (their migrations create no other schema), dropped with it and the schema made again, owned as
 * PostgreSQL 15 makes it (pg_database_owner, from 14 on; else the restoring role) and usable by
 * every role (PostgreSQL docs, "The Public Schema"). Where the role may not drop `public` (a server
 * older than 15 keeps it the bootstrap superuser's), this fails and the recount names the database.
 */
const EMPTY_AGAIN_SQL = [
  'DROP SCHEMA public CASCADE;',
  'CREATE SCHEMA public;',
  "DO $$ BEGIN IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'pg_database_owner') THEN ALTER SCHEMA public OWNER TO pg_database_owner; END IF; END $$;",
  'GRANT USAGE ON SCHEMA public TO PUBLIC;',
].join(' ');

/** `docker exec <ops> psql …` running one statement list in one transaction; the password from PGPASSFILE. */
export function psqlArgv(container: string, t: Pick<Target, 'at' | 'user' | 'dbname'>, sql: string): string[] {
  return ['exec', container, 'psql', '--no-psqlrc', '--quiet', '--no-password', '--single-transaction', '--host', t.at.host, '--port', t.at.port, '--username', t.user, '--dbname', t.dbname, '--tuples-only', '--no-align', '--set', 'ON_ERROR_STOP=1', '--command', sql];
}

async function psql(day: SwarmDayTwo, ops: string, t: Target, sql: string): Promise<string> {
  const res = await day.ctx.cli.run(psqlArgv(ops, t, sql), { allowFail: true });
  if (res.exitCode !== 0) throw dockerFailed(`exec ops psql (${t.database} at ${t.at.host})`, res.stderr);
  return res.stdout.trim();
}

/** Relations in the database outside PostgreSQL's own schemas. @throws ERR_INSTALL_DOCKER when psql answers anything but a count */
async function objectCount(day: SwarmDayTwo, ops: string, t: Target): Promise<number> {
  const out = await psql(day, ops, t, OBJECT_COUNT_SQL);
  if (!/^\d+$/.test(out)) throw dockerFailed(`exec ops psql (${t.database} at ${t.at.host})`, `expected a count, got "${out.slice(0, 80)}"`);
  return Number(out);
}

/** The ops task's container on this node. @throws ERR_INSTALL_DOCKER when none runs here */
async function opsHere(day: SwarmDayTwo): Promise<string> {
  const id = await runningTaskHere(day.ctx.cli, day.ctx.stack, 'ops');
  if (!id) throw dockerFailed('exec ops', 'no ops task runs on this node (the node labelled hospital-api.admin=true; `hospital-api up` on it)');
  return id;
}

/**
 * Deploys the stack with its databases and ops alone (nothing else has a task, so no port is
 * published), waits for them, runs `work` with the ops container, and removes the stack again,
 * also when `work` failed.
 */
async function withDatabasesOnly<T>(day: SwarmDayTwo, why: string, work: (ops: string) => Promise<T>): Promise<T> {
  const { ctx } = day;
  const alone: StackService[] = ['kong-database', 'hapi-database', 'ops'];
  const scale = Object.fromEntries(STACK_SERVICES.map((s) => [s, alone.includes(s) ? 1 : 0])) as Record<StackService, number>;
  const nodes = await labelledNodes(ctx);
  ctx.progress(`deploying stack ${ctx.stack} with its databases and ops alone, ${why}`);
  /** The stack goes again; a failure to remove it is told, never in place of what `work` did or threw. */
  const remove = async (): Promise<void> => {
    ctx.progress(`removing stack ${ctx.stack} again`);
    try {
      const rm = await ctx.cli.run(['stack', 'rm', ctx.stack], { allowFail: true });
      if (rm.exitCode !== 0) throw new Error(rm.stderr.trim().split('\n').pop() || `exit code ${rm.exitCode}`);
      await waitGone(ctx);
    } catch (err) {
      ctx.progress(`stack ${ctx.stack} was not removed (${(err as Error).message}): \`hospital-api down\` removes it`);
    }
  };
  let result: T;
  try {
    await deploy(ctx, { scale }, nodes);
    await waitUp(ctx, day.components, day.expected.filter((s) => alone.includes(s)));
    result = await work(await opsHere(day));
  } catch (err) {
    await remove();
    throw err;
  }
  await remove();
  return result;
}

export async function snapshotSwarmData(day: SwarmDayTwo, into: string, progress: (text: string) => void): Promise<DataPart[]> {
  // said on every backup, so that nobody takes the archive for the whole audit trail
  progress(`the audit logs are not in this archive: ${swarmAuditLogElsewhere(day.ctx.stack)}`);
  const dump = async (ops: string): Promise<DataPart[]> => {
    const parts: DataPart[] = [];
    for (const db of DATABASE_PARTS) {
      const t = targetOf(day.ctx.config, db);
      progress(`${where(t)}: pg_dump in the ops task`);
      await dumpInto(day.docker, pgDumpArgv(ops, { user: t.user, database: t.dbname }, t.at), join(into, db.path), db, progress);
      parts.push({ path: db.path, kind: db.kind });
    }
    return parts;
  };
  if ((await stackServices(day.ctx.cli, day.ctx.stack)).length > 0) return dump(await opsHere(day));
  // a stack that is not deployed (down): its databases alone for the dump
  return withDatabasesOnly(day, 'for the dump', dump);
}

export async function restoreSwarmData(day: SwarmDayTwo, from: string, parts: DataPart[], progress: (text: string) => void): Promise<void> {
  const plan = databasePlan(from, parts, 'swarm').map(({ db, file }) => ({ t: targetOf(day.ctx.config, db), file }));
  if (plan.length === 0) return;
  const { ctx } = day;
  const notEmpty = (what: string): HospitalApiError => new HospitalApiError('ERR_RESTORE_NOT_EMPTY', { dir: installPaths(ctx.dir).root, what });
  if ((await stackServices(ctx.cli, ctx.stack)).length > 0) {
    throw notEmpty(`no files, but the swarm runs its stack ${ctx.stack} (\`docker stack rm ${ctx.stack}\` on a manager, if it is not wanted)`);
  }
  await withDatabasesOnly(day, 'for the restore', async (ops) => {
    // every database checked before any is written
    for (const { t } of plan) {
      const count = await objectCount(day, ops, t);
      if (count !== 0) {
        throw notEmpty(
          `no files, but ${where(t)} already holds ${count} tables, sequences or indexes (${
            t.own ? `the volume ${ctx.stack}_${t.db.service === 'kong-database' ? 'kong' : 'hapi'}-data of an earlier stack of this name on the node labelled for it: \`docker volume rm\` it there, if its data is not wanted` : 'a server the hospital runs: restore into an empty database'
          })`,
        );
      }
    }
    const restored: Target[] = [];
    try {
      for (const { t, file } of plan) {
        progress(`${where(t)}: pg_restore of ${mb(statSync(file).size)} through the ops task`);
        await restoreFrom(day.docker, (bytes) => pgRestoreArgv(ops, { user: t.user, database: t.dbname }, bytes, t.at), file, t.db, progress);
        restored.push(t);
      }
    } catch (err) {
      // pg_restore's one transaction left the failed database as it was; the ones before it are emptied again,
      // and counted again: one that still holds anything is named, never passed over
      const left: string[] = [];
      for (const t of restored) {
        progress(`restore failed: emptying ${where(t)} again`);
        const emptied = await psql(day, ops, t, EMPTY_AGAIN_SQL)
          .then(() => objectCount(day, ops, t))
          .then((n) => n === 0, (e: unknown) => (progress(`could not empty ${where(t)}: ${(e as Error).message}`), false));
        if (!emptied) left.push(where(t));
      }
      if (left.length) {
        throw new HospitalApiError('ERR_RESTORE_PARTIAL', { detail: (err as Error).message, what: left.join(' and ') }, { cause: err });
      }
      throw err;
    }
  });
}

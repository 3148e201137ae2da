/**
 * The docker runtime's day-two command lines (src/runtime/docker/day-two.ts),
 * checked without an engine: each is an argv (never a shell string), pg_dump
 * and pg_restore name the users and databases the compose file creates, the
 * restore is one transaction per database, the API's reload answer path is
 * the one the compose file passes and mounts, and a restore refuses parts it
 * cannot use before it runs any docker command. What the commands do on a
 * real engine is proven by test/docker-engine/day-two.test.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { execa } from 'execa';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { API_CONTAINER_PATHS, apiReloadStatusFile } from '../../../src/runtime/docker/container-files.js';
import { apiHupArgv, kongReloadArgv, restoreDockerData, type DayTwoContext } from '../../../src/runtime/docker/day-two.js';
import { DATABASE_PARTS, pgDumpArgv, pgRestoreArgv, PG_DUMP_MAGIC, SIZED_STDIN_SCRIPT } from '../../../src/runtime/container/database-dump.js';
import { renderCompose } from '../../../src/runtime/docker/render.js';
import { DEFAULT_PORTS, INSTALL_FORMAT, type InstallConfig } from '../../../src/install-dir/install-config.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import { isHospitalApiError } from '../../../src/errors/index.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { runWithOpenStdin, type OpenStdinResult } from '../../helpers/open-stdin.js';

afterAll(() => removeTempDirs());

const config: InstallConfig = {
  formatVersion: INSTALL_FORMAT, runtime: 'docker', hosts: ['127.0.0.1'], ports: { ...DEFAULT_PORTS }, platformApiUrl: null, caGenerated: true,
  cors: { origins: ['*'], headers: null, exposedHeaders: null }, toolkitVersion: '0.1.0', installedAt: '2026-11-21T00:00:00.000Z', demo: false,
};
type Service = { command?: string[]; volumes?: string[]; environment?: Record<string, string> };
const services = parse(renderCompose('/srv/h', config), { merge: true }).services as Record<string, Service>;

/** Runs SIZED_STDIN_SCRIPT locally, with a stdin that never ends after `written`, as a lost close would leave pg_restore's. */
const sizedWithOpenStdin = (bytes: number, written: string, command: string[]): Promise<OpenStdinResult> =>
  runWithOpenStdin('sh', ['-c', SIZED_STDIN_SCRIPT, 'sh', String(bytes), ...command], written);

describe('the archive is handed on by its length, not by the end of stdin', () => {
  it('the command reads exactly the announced bytes and ends though stdin stays open', async () => {
    const archive = `${PG_DUMP_MAGIC}${'é'.repeat(40_000)}`;
    const bytes = Buffer.byteLength(archive);
    const r = await sizedWithOpenStdin(bytes, `${archive}trailing bytes that are not the archive's`, ['cat']);
    expect(r).not.toBe('hung');
    expect(r).toEqual({ exitCode: 0, stdout: archive });
  });

  it("the pipeline's status is the command's, so a failed pg_restore fails the restore", async () => {
    const r = await sizedWithOpenStdin(3, 'abc', ['sh', '-c', 'cat >/dev/null; exit 7']);
    expect(r).toEqual({ exitCode: 7, stdout: '' });
  });
});

describe('docker day-two command lines', () => {
  it('pg_dump and pg_restore run inside the database containers as the users and databases the compose file creates', () => {
    for (const db of DATABASE_PARTS) {
      const env = services[db.service]!.environment!;
      expect([db.user, db.database]).toEqual([env.POSTGRES_USER, env.POSTGRES_DB]);
    }
    const hapi = DATABASE_PARTS.find((d) => d.service === 'hapi-database')!;
    expect(pgDumpArgv('c0ffee', hapi)).toEqual(['exec', 'c0ffee', 'pg_dump', '--username', 'hapi', '--dbname', 'hapi', '--format', 'custom', '--no-password']);
    const restore = pgRestoreArgv('c0ffee', hapi, 4096);
    // the archive's length goes before the command: SIZED_STDIN_SCRIPT passes on exactly that much
    expect(restore.slice(0, 9)).toEqual(['exec', '-i', 'c0ffee', 'sh', '-c', SIZED_STDIN_SCRIPT, 'sh', '4096', 'pg_restore']);
    expect(() => pgRestoreArgv('c0ffee', hapi, -1)).toThrow(RangeError);
    expect(() => pgRestoreArgv('c0ffee', hapi, 1.5)).toThrow(RangeError);
    // all or nothing per database, and no password prompt that would hang on a pipe
    expect(restore).toEqual(expect.arrayContaining(['--single-transaction', '--exit-on-error', '--no-password', '--username', 'hapi', '--dbname', 'hapi']));
    // the parts have their own names, one per database, and kinds the backup manifest knows
    expect(DATABASE_PARTS.map((d) => [d.path, d.kind])).toEqual([['postgres/hapi.dump', 'fhir-database'], ['postgres/kong.dump', 'gateway-database']]);
  });

  it('a value is one argv element: nothing is parsed by a shell', async () => {
    const odd = 'x; rm -rf / $(id) `id`';
    expect(pgDumpArgv(odd, { user: odd, database: odd }).filter((a) => a === odd)).toHaveLength(3);
    expect(pgRestoreArgv(odd, { user: odd, database: odd }, 1).filter((a) => a === odd)).toHaveLength(3);
    // the one shell line hands its parameters on as they are (here to printf instead of pg_restore)
    const echoed = await execa('sh', ['-c', SIZED_STDIN_SCRIPT, 'sh', '0', 'printf', '%s\\n', odd, '*'], { input: '' });
    expect(echoed.stdout.split('\n')).toEqual([odd, '*']);
    expect(kongReloadArgv(odd)).toEqual(['exec', odd, 'kong', 'reload']);
    expect(apiHupArgv(odd)).toEqual(['kill', '--signal', 'HUP', odd]);
  });

  it('the API answers a reload where the compose file mounts docker/api-status, which the CLI reads', () => {
    const api = services['hospital-api']!;
    const cmd = api.command!;
    expect(cmd[cmd.indexOf('--reload-status') + 1]).toBe(API_CONTAINER_PATHS.reloadStatus);
    expect(api.volumes).toContain(`./api-status:${posix.dirname(API_CONTAINER_PATHS.reloadStatus)}`);
    expect(apiReloadStatusFile('/srv/h')).toBe(join(installPaths('/srv/h').docker, 'api-status', posix.basename(API_CONTAINER_PATHS.reloadStatus)));
  });
});

describe('docker restore refuses what it cannot use before any docker command', () => {
  const dir = tempDir('hapi-day2-unit-');
  let dockerCalls = 0;
  const ctx: DayTwoContext = {
    dir, project: 'hospital-api-unit', docker: 'docker',
    cli: async () => {
      dockerCalls++;
      throw new Error('no docker command may run');
    },
    containers: async () => [],
    waitHealthy: async () => undefined,
    writeFiles: async () => {
      throw new Error('no container file may be written');
    },
  };
  const put = (rel: string, data: string | Buffer): void => {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), data);
  };
  const code = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
      return 'resolved';
    } catch (err) {
      return isHospitalApiError(err) ? `${err.code}: ${err.message}` : String(err);
    }
  };

  it('a native part (SQLite store, gateway state file) or a file that is not a pg_dump archive', async () => {
    put('fhir/fhir.sqlite', 'SQLite format 3\0');
    expect(await code(restoreDockerData(ctx, dir, [{ path: 'fhir/fhir.sqlite', kind: 'fhir-store' }], () => undefined))).toMatch(/^ERR_RESTORE_BAD_ARCHIVE: .*native runtime/);
    put('postgres/hapi.dump', 'SELECT 1; -- plain SQL, not a custom-format archive');
    expect(await code(restoreDockerData(ctx, dir, [{ path: 'postgres/hapi.dump', kind: 'fhir-database' }], () => undefined))).toMatch(/^ERR_RESTORE_BAD_ARCHIVE: .*not a pg_dump archive/);
    expect(await code(restoreDockerData(ctx, dir, [{ path: 'postgres/kong.dump', kind: 'gateway-database' }], () => undefined))).toMatch(/not a pg_dump archive/);
    expect(dockerCalls).toBe(0);
  });

  it('a valid archive header gets as far as docker', async () => {
    put('postgres/kong.dump', Buffer.concat([Buffer.from('PGDMP'), Buffer.alloc(16)]));
    expect(await code(restoreDockerData(ctx, dir, [{ path: 'postgres/kong.dump', kind: 'gateway-database' }], () => undefined))).toContain('no docker command may run');
    expect(dockerCalls).toBe(1);
  });
});

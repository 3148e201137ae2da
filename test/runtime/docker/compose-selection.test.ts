/**
 * Which Compose the docker runtime uses (issue 10: "Compose chosen only when it
 * works"), decided by real programs found on PATH: small scripts in a temp
 * folder that answer `version --short` as Compose v2, docker-compose 1.28,
 * 1.29 or a standalone v2 binary would, and a `docker` whose `compose`
 * subcommand is missing ("unknown command", as a Docker CLI without the plugin
 * answers). Then, through the real CLI: neither → install picks native; with
 * --runtime docker, a clear ERR_INSTALL_DOCKER_NO_COMPOSE.
 *
 * The engine tier's host has docker-compose 1.29.2 and no v2 plugin (Debian
 * bookworm's archive has none), so the v2 branch can only be exercised this way.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { installArgs } from '../../helpers/install-args.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { findCompose, requireCompose } from '../../../src/runtime/container/compose.js';

interface Fake {
  /** What `docker compose version --short` prints; null: the CLI has no compose plugin. */
  v2: string | null;
  /** What `docker-compose version --short` prints; null: no such program. */
  v1: string | null;
  /** Whether `docker info` answers (an engine runs). */
  engine?: boolean;
}

const root = tempDir('hapi-compose-select-');
let n = 0;

/** A folder holding `docker` (and `docker-compose` when v1 is set), each logging its argv. */
function fakeBin(f: Fake): { dir: string; log: string } {
  const dir = join(root, `bin-${n++}`);
  mkdirSync(dir);
  const log = join(dir, 'calls.log');
  const docker = [
    '#!/bin/sh',
    `echo "docker $*" >> '${log}'`,
    'case "$1" in',
    `  info) ${f.engine === false ? 'echo "Cannot connect to the Docker daemon" >&2; exit 1' : 'echo 20.10.24'} ;;`,
    f.v2 === null
      ? '  compose) echo "docker: \'compose\' is not a docker command." >&2; echo "See \'docker --help\'" >&2; exit 1 ;;'
      : `  compose) if [ "$2" = version ]; then echo '${f.v2}'; exit 0; fi; echo "fake compose: $*" >&2; exit 1 ;;`,
    '  *) echo "fake docker: $*" >&2; exit 1 ;;',
    'esac',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'docker'), docker);
  chmodSync(join(dir, 'docker'), 0o755);
  if (f.v1 !== null) {
    const legacy = ['#!/bin/sh', `echo "docker-compose $*" >> '${log}'`, `if [ "$1" = version ]; then echo '${f.v1}'; exit 0; fi`, 'exit 1', ''].join('\n');
    writeFileSync(join(dir, 'docker-compose'), legacy);
    chmodSync(join(dir, 'docker-compose'), 0o755);
  }
  return { dir, log };
}

/** PATH with the fake folder and Node's only: no real docker or docker-compose can answer (the scripts need only /bin/sh). */
function pathWith(dir: string): string {
  return [dir, dirname(process.execPath)].join(delimiter);
}

const savedPath = process.env.PATH;
afterEach(() => {
  process.env.PATH = savedPath;
});
afterAll(() => removeTempDirs());

async function select(f: Fake) {
  const bin = fakeBin(f);
  process.env.PATH = pathWith(bin.dir);
  const found = await findCompose();
  return { found, calls: existsSync(bin.log) ? readFileSync(bin.log, 'utf8').trim().split('\n') : [] };
}

describe('choosing Compose from the programs on PATH', () => {
  it('Compose v2 (`docker compose`) wins over a docker-compose 1.29 beside it', async () => {
    const { found, calls } = await select({ v2: 'v2.24.5', v1: '1.29.2' });
    expect(found).toEqual({ argv: ['docker', 'compose'], version: 'v2.24.5', major: 2 });
    expect(calls).toEqual(['docker compose version --short']);
  });

  it('no v2 plugin: docker-compose 1.29 (Debian 12, Ubuntu 22.04) is used as v1', async () => {
    const { found, calls } = await select({ v2: null, v1: '1.29.2' });
    expect(found).toEqual({ argv: ['docker-compose'], version: '1.29.2', major: 1 });
    expect(calls).toEqual(['docker compose version --short', 'docker-compose version --short']);
  });

  it('docker-compose 1.28 is refused (no service_completed_successfully before 1.29)', async () => {
    expect((await select({ v2: null, v1: '1.28.6' })).found).toBeNull();
    await expect(requireCompose()).rejects.toMatchObject({ code: 'ERR_INSTALL_DOCKER_NO_COMPOSE' });
  });

  it('a standalone v2 binary named docker-compose counts as v2', async () => {
    expect((await select({ v2: null, v1: '2.20.3' })).found).toEqual({ argv: ['docker-compose'], version: '2.20.3', major: 2 });
  });

  it('a `docker compose` that answers a v1 version is not taken for v2', async () => {
    expect((await select({ v2: '1.29.2', v1: '1.27.4' })).found).toBeNull();
  });

  it('neither program: none found', async () => {
    const { found } = await select({ v2: null, v1: null });
    expect(found).toBeNull();
  });
});

describe('install with no working Compose (real CLI, fake programs on PATH)', () => {

  it.each([
    ['neither program', { v2: null, v1: null }],
    ['docker-compose 1.28 only', { v2: null, v1: '1.28.6' }],
  ] as const)('%s, engine answering: install picks the native runtime', async (_name, f) => {
    const bin = fakeBin(f);
    const dir = join(root, `install-${n++}`);
    const r = await runCli(installArgs({ dir, host: '127.0.0.1', noStart: true, json: true }), { env: { PATH: pathWith(bin.dir) } });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(JSON.parse(String(r.stdout)).result.runtime).toBe('native');
    // the engine was asked, and Compose was looked for before docker was chosen against
    const calls = readFileSync(bin.log, 'utf8');
    expect(calls).toContain('docker info');
    expect(calls).toContain('docker compose version --short');
  });

  it('Compose v2 and an engine answering: install picks docker', async () => {
    const bin = fakeBin({ v2: 'v2.24.5', v1: null });
    const dir = join(root, `install-${n++}`);
    const r = await runCli(installArgs({ dir, host: '127.0.0.1', noStart: true, json: true }), { env: { PATH: pathWith(bin.dir) } });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(JSON.parse(String(r.stdout)).result.runtime).toBe('docker');
  });

  it('--runtime docker with neither program: a clear error naming both Composes, non-zero exit', async () => {
    const bin = fakeBin({ v2: null, v1: '1.28.6' });
    const dir = join(root, `install-${n++}`);
    const r = await runCli(['install', '--runtime', 'docker', '--dir', dir, '--generate-ca', '--host', '127.0.0.1', '--json'], { env: { PATH: pathWith(bin.dir) } });
    expect(r.exitCode).toBe(3);
    const err = JSON.parse(String(r.stdout)).error as { code: string; message: string; hint: string };
    expect(err.code).toBe('ERR_INSTALL_DOCKER_NO_COMPOSE');
    expect(err.message).toContain('docker compose');
    expect(err.message).toContain('docker-compose');
    expect(err.hint).toContain('--runtime native');
    // it never tried to run a compose command
    expect(readFileSync(bin.log, 'utf8')).not.toMatch(/ up\b| -p /);
  });
});

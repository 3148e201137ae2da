/**
 * The Swarm runtime's seam (issue 29): its settings from the install flags
 * (replicas 1-9, databases on a labelled node or at a URL without a password,
 * overlay encryption), whether this host can deploy a stack (a `docker`
 * stand-in answers as the engine would), and install and openRuntime refusing
 * it, through the real CLI, with nothing written, until the runtime exists.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HospitalApiError } from '../../../src/errors/index.js';
import { DEFAULT_REPLICAS, swarmSettings } from '../../../src/runtime/swarm/settings.js';
import { swarmManagerHere } from '../../../src/runtime/swarm/engine.js';
import { swarmProfile } from '../../../src/runtime/swarm/profile.js';
import { IMAGES } from '../../../src/runtime/container/images.js';
import { projectName } from '../../../src/runtime/container/project.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import { openRuntime } from '../../../src/runtime/index.js';
import { readInstallConfig, writeInstallConfig } from '../../../src/install-dir/install-config.js';
import type { RuntimeFlags } from '../../../src/runtime/profile.js';
import { installConfig } from '../../helpers/install-config.js';
import { databaseCaFile, withDatabaseCa } from '../../helpers/database-ca.js';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(removeTempDirs);

function refusal(flags: RuntimeFlags): { code: string; name: string; message: string } {
  try {
    swarmSettings(undefined, flags);
  } catch (err) {
    const e = err as HospitalApiError;
    return { code: e.code, name: String(e.params?.name), message: e.message };
  }
  throw new Error(`accepted ${JSON.stringify(flags)}`);
}

describe('swarm settings from the install flags', () => {
  it('defaults to two of each, the databases on their labelled nodes, the overlay encrypted, the pinned images', () => {
    expect(swarmSettings(undefined, {})).toEqual({
      images: { kong: IMAGES.kong, hapi: IMAGES.hapi, postgres: IMAGES.postgres, api: null },
      replicas: DEFAULT_REPLICAS,
      databases: { kong: { node: null }, fhir: { node: null } },
      overlayEncryption: true,
      databaseCa: null,
    });
    expect(DEFAULT_REPLICAS).toEqual({ gateway: 2, fhir: 2, api: 2 });
  });

  it('takes each flag, and keeps what a previous install chose for the flags not given', () => {
    const first = swarmSettings(undefined, {
      gatewayReplicas: '3', fhirReplicas: '1', apiReplicas: '9', kongDatabaseNode: 'node-1.example', fhirDatabaseUrl: 'postgresql://hapi@db.hospital.example:6432/fhir', overlayEncryption: 'off', apiImage: 'registry.example/hospital-api:1.2.3',
      databaseCa: databaseCaFile(),
    });
    expect(first).toMatchObject({
      replicas: { gateway: 3, fhir: 1, api: 9 },
      databases: { kong: { node: 'node-1.example' }, fhir: { url: 'postgres://hapi@db.hospital.example:6432/fhir' } },
      overlayEncryption: false,
      images: { api: 'registry.example/hospital-api:1.2.3' },
    });
    expect(swarmSettings(first, {})).toEqual(first);
    expect(swarmSettings(first, { apiReplicas: '2', overlayEncryption: 'on', fhirDatabaseNode: 'n2' })).toEqual({
      ...first, replicas: { ...first.replicas, api: 2 }, overlayEncryption: true, databases: { ...first.databases, fhir: { node: 'n2' } },
    });
  });

  it.each([
    [{ gatewayReplicas: '0' }, '--gateway-replicas'],
    [{ fhirReplicas: '10' }, '--fhir-replicas'],
    [{ apiReplicas: '2.5' }, '--api-replicas'],
    [{ apiReplicas: ' 2' }, '--api-replicas'],
    [{ kongDatabaseNode: '-n1' }, '--kong-database-node'],
    [{ fhirDatabaseNode: 'n1; rm -rf /' }, '--fhir-database-node'],
    [{ overlayEncryption: 'yes' }, '--overlay-encryption'],
    [{ kongDatabaseUrl: 'mysql://kong@db/kong' }, '--kong-database-url'],
    [{ kongDatabaseUrl: 'postgres://db.example/kong' }, '--kong-database-url'],
    [{ kongDatabaseUrl: 'postgres://kong@db.example' }, '--kong-database-url'],
    [{ fhirDatabaseUrl: 'postgres://hapi@db.example/fhir?sslmode=disable' }, '--fhir-database-url'],
    [{ fhirDatabaseUrl: 'not a url' }, '--fhir-database-url'],
    // `docker stack deploy` would read ${…} in the stack file as a variable
    [{ fhirDatabaseUrl: 'postgres://hapi@db$x/fhir' }, '--fhir-database-url'],
    [{ fhirDatabaseUrl: 'postgres://hapi@db/fh$ir' }, '--fhir-database-url'],
    [{ kongDatabaseNode: 'n1', kongDatabaseUrl: 'postgres://kong@db/kong' }, '--kong-database-node'],
    // HAPI's pools would exceed the stack's own database's connections
    [{ fhirReplicas: '7' }, '--fhir-replicas'],
  ] as Array<[RuntimeFlags, string]>)('refuses %j naming %s', (flags, name) => {
    expect(refusal(flags)).toMatchObject({ code: 'ERR_INSTALL_BAD_OPTION', name });
  });

  it('takes seven or more HAPI replicas with a database the hospital sized', () => {
    expect(swarmSettings(undefined, withDatabaseCa({ fhirReplicas: '9', fhirDatabaseUrl: 'postgres://hapi@db/fhir' })).replicas.fhir).toBe(9);
  });

  it('refuses a password in a database URL without repeating it', () => {
    const r = refusal({ fhirDatabaseUrl: 'postgres://hapi:S3cret-Pw@db.hospital.example/fhir' });
    expect(r).toMatchObject({ code: 'ERR_INSTALL_BAD_OPTION', name: '--fhir-database-url' });
    expect(r.message).toContain('password');
    expect(r.message).not.toContain('S3cret-Pw');
  });

  it('needs --database-ca with a database outside the swarm, keeps it on a rerun, and refuses a file that holds no valid certificate', () => {
    const url = { fhirDatabaseUrl: 'postgres://hapi@db.hospital.example/fhir' };
    const r = refusal(url);
    expect(r).toMatchObject({ code: 'ERR_INSTALL_BAD_OPTION', name: '--database-ca' });
    expect(r.message).toContain('--fhir-database-url');
    const first = swarmSettings(undefined, { ...url, databaseCa: databaseCaFile() });
    expect(first.databaseCa).toBe(`${new X509Certificate(readFileSync(databaseCaFile())).toString().trim()}\n`);
    // a rerun without the flag keeps it; the stack's own databases need none
    expect(swarmSettings(first, {}).databaseCa).toBe(first.databaseCa);
    expect(swarmSettings(undefined, {}).databaseCa).toBeNull();
    const dir = tempDir('hapi-swarm-dbca-bad-');
    writeFileSync(join(dir, 'not-pem'), 'hello\n');
    for (const file of [join(dir, 'not-pem'), join(dir, 'missing.pem')]) {
      expect(refusal({ ...url, databaseCa: file }), file).toMatchObject({ code: 'ERR_INSTALL_BAD_OPTION', name: '--database-ca' });
    }
  });

  it('is what install.json holds: read back as written, and a damaged value refused naming its field', () => {
    const dir = tempDir('hapi-swarm-json-');
    const swarm = swarmSettings(undefined, withDatabaseCa({ kongDatabaseUrl: 'postgres://kong@db/kong', fhirDatabaseNode: 'n2' }));
    writeInstallConfig(dir, installConfig({ runtime: 'swarm', swarm }));
    expect(readInstallConfig(dir).swarm).toEqual(swarm);
    writeInstallConfig(dir, installConfig({ runtime: 'swarm', swarm: { ...swarm, replicas: { ...swarm.replicas, api: 12 } } }));
    expect(() => readInstallConfig(dir)).toThrow(/replicas\.api/);
  });
});

describe('the audit logs of a swarm', () => {
  it('are on no file of this host: `audit verify` without a file names the volume on each API node, and opens nothing', async () => {
    const dir = tempDir('hapi-swarm-audit-');
    writeInstallConfig(dir, installConfig({ runtime: 'swarm', swarm: swarmSettings(undefined, {}) }));
    expect(swarmProfile.auditLogFile(installPaths(dir), readInstallConfig(dir))).toBeNull();
    const r = await runCli(['audit', 'verify', '--dir', dir, '--json']);
    expect(r.exitCode).toBe(2);
    const doc = JSON.parse(String(r.stdout)) as { ok: boolean; error: { code: string; message: string } };
    expect(doc.ok).toBe(false);
    expect(doc.error.code).toBe('ERR_USAGE');
    expect(doc.error.message).toContain(`${projectName(dir)}_api-audit`);
    expect(doc.error.message).toContain('audit verify FILE');
  });
});

/** A `docker` stand-in answering `docker info` as an engine in the given swarm state would; `down`: no engine. */
function fakeDocker(swarm: string | 'down'): string {
  const bin = tempDir('hapi-fake-docker-');
  const info = swarm === 'down' ? 'echo "Cannot connect to the Docker daemon" >&2; exit 1' : `case "$3" in *Swarm*) echo "${swarm}";; *) echo 20.10.24;; esac`;
  // no Compose: `docker compose` is unknown, docker-compose fails, so the docker runtime is not available
  writeFileSync(join(bin, 'docker'), `#!/bin/sh\nif [ "$1" = info ]; then ${info}; exit 0; fi\necho "docker: unknown command: $1" >&2\nexit 1\n`);
  writeFileSync(join(bin, 'docker-compose'), '#!/bin/sh\nexit 1\n');
  chmodSync(join(bin, 'docker'), 0o755);
  chmodSync(join(bin, 'docker-compose'), 0o755);
  return bin;
}

describe('where the swarm runtime is available', () => {
  it('on a manager of an active swarm only', async () => {
    expect(await swarmManagerHere(join(fakeDocker('active true'), 'docker'))).toBe(true);
    expect(await swarmManagerHere(join(fakeDocker('active false'), 'docker'))).toBe(false); // a worker
    expect(await swarmManagerHere(join(fakeDocker('inactive false'), 'docker'))).toBe(false);
    expect(await swarmManagerHere(join(fakeDocker('pending false'), 'docker'))).toBe(false);
    expect(await swarmManagerHere(join(fakeDocker('down'), 'docker'))).toBe(false);
    expect(await swarmManagerHere(join(tempDir(), 'no-docker-here'))).toBe(false);
  });

  it("is the profile's answer, asking the docker on PATH", async () => {
    const path = process.env.PATH;
    try {
      process.env.PATH = `${fakeDocker('active true')}:${path}`;
      expect(await swarmProfile.available()).toBe(true);
      process.env.PATH = `${fakeDocker('active false')}:${path}`;
      expect(await swarmProfile.available()).toBe(false);
    } finally {
      process.env.PATH = path;
    }
  });
});

describe('install and openRuntime with the swarm runtime', () => {

  it('install --runtime swarm --no-start writes install.json with its swarm settings and the stack file in a private folder, and deploys nothing', async () => {
    const dir = join(tempDir('hapi-swarm-cli-'), 'inst');
    const r = await runCli(['install', '--runtime', 'swarm', '--no-start', '--dir', dir, '--generate-ca', '--json', '--gateway-replicas', '3', '--overlay-encryption', 'off', '--kong-database-node', 'n1']);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(JSON.parse(String(r.stdout)).result.runtime).toBe('swarm');
    const config = readInstallConfig(dir);
    expect(config.swarm).toMatchObject({ replicas: { gateway: 3, fhir: 2, api: 2 }, overlayEncryption: false, databases: { kong: { node: 'n1' }, fhir: { node: null } } });
    const stack = join(dir, 'swarm', 'stack.yaml');
    expect(statSync(join(dir, 'swarm')).mode & 0o777).toBe(0o700);
    expect(readFileSync(stack, 'utf8')).toContain('endpoint_mode: dnsrr');
  });

  it('install --runtime swarm on a worker (no manager here) stops before anything is written, saying so', async () => {
    const dir = join(tempDir('hapi-swarm-cli-'), 'inst');
    const r = await runCli(['install', '--runtime', 'swarm', '--dir', dir, '--generate-ca', '--json'], { env: { PATH: `${fakeDocker('active false')}:${process.env.PATH}` } });
    expect(r.exitCode).toBe(3);
    const error = JSON.parse(String(r.stdout)).error;
    expect(error.code).toBe('ERR_INSTALL_DOCKER');
    expect(error.message).toContain('not a manager of an active swarm');
    expect(existsSync(dir)).toBe(false);
  });

  it.each([
    [['--runtime', 'swarm', '--api-replicas', '0'], 'ERR_INSTALL_BAD_OPTION', '--api-replicas'],
    [['--runtime', 'swarm', '--kong-database-url', 'postgres://kong:pw@db/kong'], 'ERR_INSTALL_BAD_OPTION', '--kong-database-url'],
    [['--runtime', 'swarm', '--bind-address', '0.0.0.0'], 'ERR_USAGE', '--bind-address is not a flag of the swarm runtime (only of docker)'],
    [['--runtime', 'native', '--gateway-replicas', '2'], 'ERR_USAGE', '--gateway-replicas is not a flag of the native runtime (only of swarm)'],
    [['--runtime', 'docker', '--overlay-encryption', 'off'], 'ERR_USAGE', '--overlay-encryption is not a flag of the docker runtime (only of swarm)'],
    [['--runtime', 'native', '--kong-image', 'kong:3.9.3'], 'ERR_USAGE', '--kong-image is not a flag of the native runtime (only of docker, swarm)'],
  ])('install %j → %s naming %s, nothing written', async (args, code, named) => {
    const dir = join(tempDir('hapi-swarm-cli-'), 'inst');
    const r = await runCli(['install', '--no-start', '--dir', dir, '--generate-ca', '--json', ...args]);
    expect(r.exitCode).toBe(2);
    const error = JSON.parse(String(r.stdout)).error;
    expect(error.code).toBe(code);
    expect(error.message).toContain(named);
    expect(error.message).not.toContain(':pw@');
    expect(existsSync(dir)).toBe(false);
  });

  it('is never the default, even on a swarm manager', async () => {
    const dir = join(tempDir('hapi-swarm-default-'), 'inst');
    const r = await runCli(['install', '--no-start', '--dir', dir, '--generate-ca', '--json'], { env: { PATH: `${fakeDocker('active true')}:${process.env.PATH}` } });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(JSON.parse(String(r.stdout)).result.runtime).toBe('native');
    expect(readInstallConfig(dir).runtime).toBe('native');
  });

  it('openRuntime opens an install.json that names it', async () => {
    const dir = tempDir('hapi-swarm-open-');
    writeInstallConfig(dir, installConfig({ runtime: 'swarm', swarm: swarmSettings(undefined, {}) }));
    const before = readdirSync(dir);
    await expect(openRuntime(dir)).resolves.toMatchObject({ name: 'swarm' });
    expect(readdirSync(dir)).toEqual(before);
  });
});

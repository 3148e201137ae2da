/**
 * Issue 22, the Debian package as hospital IT meets it: a clean Debian 12 server with systemd as PID 1
 * and no Node.js on it (test/docker-engine/images/package-host), and the .deb that `npm run package`
 * writes, installed with apt. In it, as root, the three commands the README gives:
 * `hospital-api install --runtime native --generate-ca …`, `consumer create … --write-env`, `verify`
 * → ACCEPTED, with the components running as systemd services under the hospital-api user; a record
 * through POST /api/patients. Then the package's life cycle: a newer .deb installed over it restarts
 * the installation on the new version and keeps data, keys and records; `apt remove` stops it and keeps
 * every data file; `apt purge` keeps them too and says where they are.
 *
 * The .debs are built here from this checkout's dist/ (`--no-build`: dist/ is never replaced under the
 * other tests' CLI) with gzip (`--fast`); test/package/ proves the shipped xz build reproducible and
 * lintian-clean. The container shares the host's network (the tier's engine has no bridge): the ports
 * are free ones of this host, reached on loopback. Without an engine every test is skipped with one line.
 */
import { execa } from 'execa';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { testPorts } from '../helpers/native-install.js';
import { writeTokens } from '../../src/demo/tokens.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import { docker, engineAnswers, sayNoEngine, TIER_IMAGES } from './engine.js';
import { formatTimings, REPO, startSystemdHost, syntheticIds, type Timings, unitShowIn, until } from './site.js';
import { postPatient, tokenOf } from '../helpers/patients.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();

const IMAGE = 'hospital-api-tier/package-host:1';
const NAME = `hapi-package-${process.pid}`;
const DIR = '/var/lib/hospital-api';
const USER = 'hospital-api';
const COMPONENTS = ['fhir', 'gateway', 'api'] as const;
const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
/** Debian orders `~` before anything: this version is lower than VERSION (deb-version(7)). */
const OLD_VERSION = `${VERSION}~tier`;
const SEED = 'docker-package';
const timings: Timings = {};
const started = Date.now();
const debs = tempDir('hapi-debs-');
let ports: Record<'api' | 'fhir' | 'gatewayHttp' | 'gatewayHttps' | 'gatewayAdmin' | 'metrics' | 'platform', number>;

/** A command in the server container, as root. */
async function onServer(args: string[], options: { allowFail?: boolean; timeout?: number } = {}) {
  return docker(['exec', NAME, ...args], { allowFail: options.allowFail ?? true, timeout: options.timeout ?? 300_000 });
}

/** The packaged command, as root on the server: /usr/bin/hospital-api, found on PATH. */
async function hospitalApi(args: string[]) {
  const t0 = Date.now();
  const r = await onServer(['hospital-api', ...args]);
  const name = args.slice(0, args[0] === 'consumer' ? 2 : 1).join(' ');
  timings[name] = (timings[name] ?? 0) + (Date.now() - t0);
  return r;
}

async function aptInstall(version: string, flags: string[] = []) {
  const file = `hospital-api_${version}_amd64.deb`;
  await docker(['cp', join(debs, file), `${NAME}:/root/${file}`]);
  const t0 = Date.now();
  const r = await onServer(['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '--no-install-recommends', ...flags, `/root/${file}`], { timeout: 600_000 });
  timings[`apt install ${version}`] = Date.now() - t0;
  return r;
}

/** The component's unit in the container. */
const unitShow = (component: string) => unitShowIn(NAME, component);


const dataset = generateDataset({ patients: 2, seed: SEED, sizes: '20-60' });
let tokens: Array<{ careId: string; token: string }> = [];

/** Every patient's record through the API, complete. */
async function recordsFlow(): Promise<void> {
  for (const [i, patient] of dataset.patients.entries()) {
    const token = tokenOf(tokens, patient.careId);
    let last = 'no answer';
    const res = await until(`patient ${i + 1}'s record`, 60_000, async () => {
      const r = await postPatient(ports.api, patient.careId, token).catch((err: Error) => ({ status: 0, resources: [], error: err.message }));
      last = `status ${r.status}`;
      return r.status === 200 ? r : null;
    }).catch((err: Error) => {
      throw new Error(`${err.message} (last: ${last})`);
    });
    const got = syntheticIds(res.resources);
    const expected = [patient.patient, ...patient.groups.flatMap((g) => g.resources)].map((r) => r.id);
    expect(expected.filter((id) => !got.has(id)), `patient ${i + 1}: every generated resource`).toEqual([]);
  }
}

describe.skipIf(!engine)('the Debian package on a clean Debian 12 with systemd (issue 22)', () => {
  beforeAll(async () => {
    let t0 = Date.now();
    for (const version of [OLD_VERSION, VERSION]) {
      const r = await execa('node', [join(REPO, 'scripts', 'package.mjs'), '--version', version, '--out', debs, '--fast', '--deb-only', '--no-build'], { reject: false, cwd: REPO, stdin: 'ignore' });
      if (r.exitCode !== 0) throw new Error(`package ${version}: ${r.stderr}`);
    }
    timings.packages = Date.now() - t0;
    t0 = Date.now();
    await docker(['build', '-q', '--network', 'host', '-t', IMAGE, '--build-arg', `BASE_IMAGE=${TIER_IMAGES.debian}`, join(REPO, 'test', 'docker-engine', 'images', 'package-host')], { timeout: 1_800_000 });
    timings.image = Date.now() - t0;
    ports = await testPorts('platform');
    await startSystemdHost(NAME, IMAGE);
    const platformDir = tempDir('hapi-package-platform-');
    tokens = writeTokens(platformDir, dataset.patients.map((p) => p.careId));
    await docker(['cp', `${platformDir}/.`, `${NAME}:/platform`]);
  }, 3_600_000);

  afterAll(async () => {
    if (!engine) return;
    await docker(['rm', '-f', NAME], { allowFail: true, timeout: 300_000 });
    process.stdout.write(`docker package wall time ${((Date.now() - started) / 1000).toFixed(0)} s; steps (s): ${formatTimings(timings)}\n`);
    removeTempDirs();
  }, 600_000);

  it('apt installs the .deb on a server with no Node: /usr/bin/hospital-api runs on the bundled Node, the user and /var/lib/hospital-api exist', async () => {
    expect((await onServer(['sh', '-c', 'command -v node nodejs'])).code).not.toBe(0);
    const apt = await aptInstall(OLD_VERSION);
    expect(apt.code, `${apt.out}\n${apt.err}`).toBe(0);
    const v = await hospitalApi(['--version']);
    expect([v.code, v.out.trim()]).toEqual([0, OLD_VERSION]);
    expect((await onServer(['readlink', '-f', '/usr/bin/hospital-api'])).out.trim()).toBe('/usr/lib/hospital-api/bin/hospital-api');
    expect((await onServer(['/usr/lib/hospital-api/node/bin/node', '--version'])).out.trim()).toMatch(/^v24\./);
    expect((await onServer(['getent', 'passwd', USER])).out).toContain(':/usr/sbin/nologin');
    expect((await onServer(['stat', '-c', '%U %a', DIR])).out.trim()).toBe(`${USER} 750`);
    // nothing runs before an installation exists
    expect((await onServer(['sh', '-c', 'systemctl list-units --all --plain --no-legend "hospital-api*"'])).out.trim()).toBe('');
  }, 900_000);

  it('install, consumer create --write-env and verify: ACCEPTED, the components systemd services under the hospital-api user, a record through the API', async () => {
    const install = await hospitalApi([
      'install', '--runtime', 'native', '--host', '127.0.0.1', '--generate-ca', '--platform-url', `http://127.0.0.1:${ports.platform}`, '--identifier-system', 'urn:hospital-api:platform-care-id',
      '--api-port', String(ports.api), '--fhir-port', String(ports.fhir), '--gateway-http-port', String(ports.gatewayHttp),
      '--gateway-https-port', String(ports.gatewayHttps), '--gateway-admin-port', String(ports.gatewayAdmin), '--metrics-port', String(ports.metrics),
    ]);
    expect(install.code, `${install.out}\n${install.err}`).toBe(0);
    expect(JSON.parse((await onServer(['cat', `${DIR}/install.json`])).out).supervisor).toBe('systemd');
    const consumer = await hospitalApi(['consumer', 'create', 'hospital', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    expect((await onServer(['systemctl', 'is-enabled', 'hospital-api.target'])).out.trim()).toBe('enabled');
    for (const c of COMPONENTS) {
      const show = await until(`hospital-api-${c}.service active`, 120_000, async () => {
        const s = await unitShow(c);
        return s.ActiveState === 'active' ? s : null;
      });
      expect([c, show.User]).toEqual([c, USER]);
      expect(show.ExecStart, c).toContain('/usr/lib/hospital-api/node/bin/node');
      expect((await onServer(['ps', '-o', 'user=', '-p', show.MainPID!])).out.trim()).toBe(USER);
    }
    // the platform stand-in as a transient unit of the service user (its tokens are theirs), and the
    // patients loaded from this host over loopback
    await onServer(['chown', '-R', `${USER}:${USER}`, '/platform'], { allowFail: false });
    const platform = await onServer(['systemd-run', '--unit', 'platform-stand-in', '--uid', USER, '--gid', USER, '-p', 'ReadOnlyPaths=/platform',
      'hospital-api', 'demo', '--platform-stand-in', '--listen', `127.0.0.1:${ports.platform}`, '--dir', '/platform']);
    expect(platform.code, platform.err).toBe(0);
    const data = tempDir('hapi-package-data-');
    const gen = await runCli(['fhir', 'generate', '--patients', String(dataset.patients.length), '--seed', SEED, '--sizes', '20-60', '--out', data]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);
    const load = await runCli(['fhir', 'load', join(data, '00-shared.json'), join(data, '01-patients.ndjson'), '--url', `http://127.0.0.1:${ports.fhir}/fhir`]);
    expect(load.exitCode, String(load.stderr)).toBe(0);
    const verify = await hospitalApi(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
    expect(verify.out).toContain('ACCEPTED');
    await recordsFlow();
  }, 900_000);

  it('a newer .deb over it: the installation runs again on the new version, with its data, keys and records', async () => {
    const before = (await onServer(['sh', '-c', `sha256sum ${DIR}/hospital-api.env ${DIR}/tls/*.key && ls ${DIR}/reports`])).out;
    const apt = await aptInstall(VERSION);
    expect(apt.code, `${apt.out}\n${apt.err}`).toBe(0);
    expect((await hospitalApi(['--version'])).out.trim()).toBe(VERSION);
    expect((await onServer(['sh', '-c', `sha256sum ${DIR}/hospital-api.env ${DIR}/tls/*.key && ls ${DIR}/reports`])).out).toBe(before);
    for (const c of COMPONENTS) {
      await until(`hospital-api-${c}.service active after the upgrade`, 120_000, async () => ((await unitShow(c)).ActiveState === 'active' ? true : null));
    }
    const status = await hospitalApi(['status', '--json']);
    expect(status.code, status.err).toBe(0);
    const doc = JSON.parse(status.out) as { result: { components: Array<{ name: string; state: string; version?: string }> } };
    expect(doc.result.components.map((c) => [c.name, c.state])).toEqual(COMPONENTS.map((c) => [c, 'up']));
    await recordsFlow();
    const verify = await hospitalApi(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
  }, 900_000);

  it('a package over an installation of an older format: with the key file the hospital placed, postinst migrates it (a backup first); a stopped installation stays stopped', async () => {
    expect((await hospitalApi(['down'])).code).toBe(0);
    // the format before this one (1 → 2 made the secret files 0600): what an older toolkit left
    await onServer(['sed', '-i', 's/"formatVersion": *[0-9]*/"formatVersion": 1/', `${DIR}/install.json`], { allowFail: false });
    await onServer(['sh', '-c', 'install -d -m 0700 /etc/hospital-api && head -c 48 /dev/urandom > /etc/hospital-api/backup.key && chmod 0600 /etc/hospital-api/backup.key'], { allowFail: false });
    const apt = await aptInstall(VERSION, ['--reinstall']);
    expect(apt.code, `${apt.out}\n${apt.err}`).toBe(0);
    expect(`${apt.out}\n${apt.err}`).toContain('format 1 → 2');
    expect(JSON.parse((await onServer(['cat', `${DIR}/install.json`])).out).formatVersion).toBe(2);
    expect((await onServer(['sh', '-c', `ls ${DIR}/backups`])).out).toMatch(/pre-upgrade-format-1-.*\.tar/);
    for (const c of COMPONENTS) expect((await unitShow(c)).ActiveState, c).not.toBe('active');
    expect((await hospitalApi(['up'])).code).toBe(0);
    await recordsFlow();
  }, 900_000);

  it("the docker runtime's API image builds from the package's own files, with no checkout: its app/ and Dockerfile", async () => {
    const unpacked = tempDir('hapi-deb-');
    await execa('dpkg-deb', ['-x', join(debs, `hospital-api_${VERSION}_amd64.deb`), unpacked]);
    const app = join(unpacked, 'usr', 'lib', 'hospital-api', 'app');
    const tag = `hospital-api-tier/from-package:${process.pid}`;
    const t0 = Date.now();
    try {
      // the build `docker compose` runs for an install without --api-image (context: the toolkit's own folder)
      await docker(['build', '-q', '-t', tag, '--build-arg', `NODE_IMAGE=${TIER_IMAGES.node}`, app], { timeout: 1_200_000 });
      timings['api image from the package'] = Date.now() - t0;
      const v = await docker(['run', '--rm', '--network', 'none', tag, '--version'], { allowFail: true });
      expect([v.code, v.out.trim()], v.err).toEqual([0, VERSION]);
      const who = await docker(['run', '--rm', '--network', 'none', '--entrypoint', 'id', tag, '-u'], { allowFail: true });
      expect(who.out.trim()).toBe('1000');
    } finally {
      await docker(['rmi', '-f', tag], { allowFail: true });
    }
  }, 1_200_000);

  it('apt remove stops the services and keeps every data file; apt purge keeps them too and says where they are', async () => {
    const files = (await onServer(['find', DIR, '-type', 'f'])).out.split('\n').filter(Boolean).sort();
    expect(files).toContain(`${DIR}/install.json`);
    expect(files.some((f) => f.startsWith(`${DIR}/fhir/`))).toBe(true);
    const remove = await onServer(['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'remove', '-y', 'hospital-api'], { timeout: 600_000 });
    expect(remove.code, `${remove.out}\n${remove.err}`).toBe(0);
    for (const c of COMPONENTS) expect((await unitShow(c)).ActiveState, c).not.toBe('active');
    expect((await onServer(['sh', '-c', 'command -v hospital-api'])).code).not.toBe(0);
    const kept = (await onServer(['find', DIR, '-type', 'f'])).out.split('\n').filter(Boolean).sort();
    // what a stopped stack leaves out by design: its run folder, and SQLite's WAL and index, folded into the store at close
    expect(files.filter((f) => !kept.includes(f) && !f.startsWith(`${DIR}/run/`) && !/\.sqlite-(wal|shm)$/.test(f))).toEqual([]);
    const purge = await onServer(['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'purge', '-y', 'hospital-api'], { timeout: 600_000 });
    expect(purge.code, `${purge.out}\n${purge.err}`).toBe(0);
    expect(`${purge.out}\n${purge.err}`).toContain(`kept ${DIR}`);
    expect((await onServer(['test', '-f', `${DIR}/install.json`])).code).toBe(0);
    expect((await onServer(['sh', '-c', 'ls -d /etc/systemd/system/hospital-api* /etc/systemd/system/*.wants/hospital-api* 2>/dev/null'])).out.trim()).toBe('');
  }, 900_000);
});

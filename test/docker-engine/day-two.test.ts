/**
 * Issue 15 on the docker runtime, on a real Docker engine, through the real
 * CLI and one stack reused by every case (CI runs this on 2 cores):
 * install → consumer create → verify; `consumer rotate-key --write-env` under a
 * steady stream of POST /api/patients loses no request and restarts no
 * container; `cert renew` is picked up by kong without a restart and verify
 * passes; `backup` (pg_dump inside the database containers, while serving);
 * a damaged archive, a wrong passphrase, or an "empty" directory whose project
 * still has its database volumes change nothing; then down --volumes, wipe,
 * restore into the empty directory, up: verify passes and the patient record
 * reads back equal; `upgrade` from the previous install format takes its
 * automatic backup through the databases. Issue 46: after `cert renew` the
 * running API's next audit seal is signed by the new audit-seal certificate;
 * `install --verify-every 30s` adds the acceptance services (no engine socket),
 * whose scheduled record is signed, chained and shown by the API's /metrics.
 *
 * Setup as stack.test.ts: the tier's images (kong/hapi stand-ins with the real
 * images' interface, Debian's Postgres), the install image flags, a platform
 * stand-in on the project network. Without an engine every test is skipped
 * with one plain line.
 */
import { chownSync, copyFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes, X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { execa } from 'execa';
import { execFileSync } from 'node:child_process';
import { list as tarList } from 'tar';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { installArgs, type InstallArgsOptions } from '../helpers/install-args.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { projectName } from '../../src/runtime/container/project.js';
import { findCompose } from '../../src/runtime/container/compose.js';
import { createDockerRuntime } from '../../src/runtime/docker/index.js';
import { readInstallConfig } from '../../src/install-dir/install-config.js';
import { presentedFingerprint } from '../../src/install/cert-renew.js';
import { createBackup } from '../../src/backup/create.js';
import { docker, engineAnswers, sayNoEngine } from './engine.js';
import { API_IMAGE, containersOf, formatTimings, IMAGE_FLAGS, prepareTier, purgeProjects, REAL, runningContainer, tierSite, volumesOf } from './site.js';
import { postPatient, tokenOf, type RecordEntry } from '../helpers/patients.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();

const SEED = 'docker-day-two';
const SIZES = '10-40';
const PATIENTS = 2;
const PLATFORM_PORT = 8088;
const PASSPHRASE = 'day-two backup passphrase 0123';
const BACKUP_ENV = { HOSPITAL_API_BACKUP_PASSPHRASE: PASSPHRASE };

const spare = tempDir('hapi-docker-day2-spare-');
const { dir, platformDir, project, platformName, timings, cli } = tierSite('hapi-docker-day2');
let ports: Record<string, number> = {};
const figures: string[] = [];
const started = Date.now();


/** This site's install (test/helpers/install-args.ts). */
const siteInstall = (): InstallArgsOptions => ({
  runtime: 'docker', host: '127.0.0.1', platformUrl: `http://platform:${PLATFORM_PORT}`,
  ports: { api: ports.api!, fhir: ports.fhir!, gatewayHttps: ports.gatewayHttps! }, extra: IMAGE_FLAGS,
});

const container = (service: string) => runningContainer(project, service);

async function compose(args: string[], composeFile: string): Promise<void> {
  const found = await findCompose();
  if (!found) throw new Error('no Compose');
  const [bin, ...prefix] = found.argv as [string, ...string[]];
  await execa(bin, [...prefix, '-p', project, '-f', composeFile, ...args], { timeout: 300_000 });
}

type Entry = RecordEntry;

async function fhirAnswers(): Promise<boolean> {
  try {
    const res = await request(`http://127.0.0.1:${ports.fhir}/fhir/metadata`, { headersTimeout: 5000, bodyTimeout: 5000 });
    await res.body.text();
    return res.statusCode === 200;
  } catch {
    return false;
  }
}

/** manifest.json, the archive's first member: its header's ustar size field (octal), then its data. */
function manifestOf(file: string): { parts: Array<{ path: string; kind: string; member: string; cipherBytes: number }> } {
  const bytes = readFileSync(file);
  const size = parseInt(bytes.toString('latin1', 124, 136).replace(/[\0 ]/g, ''), 8);
  return JSON.parse(bytes.toString('utf8', 512, 512 + size));
}

/** The record, in a stable order: the same resources must read back the same. */
const sorted = (r: Entry[]): Entry[] => [...r].sort((a, b) => `${a.resource.resourceType}/${a.resource.id}`.localeCompare(`${b.resource.resourceType}/${b.resource.id}`));

const platformNetwork = async (how: 'connect' | 'disconnect'): Promise<void> => {
  await docker(how === 'connect' ? ['network', 'connect', '--alias', 'platform', `${project}_default`, platformName] : ['network', 'disconnect', `${project}_default`, platformName]);
};

const dataset = generateDataset({ patients: PATIENTS, seed: SEED, sizes: SIZES });
let tokens: Array<{ careId: string; token: string }> = [];
let archive = '';
let recordBefore: Entry[] = [];

describe.skipIf(!engine)('docker day two on a real engine (issue 15)', () => {
  beforeAll(async () => {
    ({ ports, tokens } = await prepareTier({ platformDir, timings }, dataset.patients.map((p) => p.careId)));
  }, 3_600_000);

  afterAll(async () => {
    if (!engine) return;
    await docker(['rm', '-f', platformName], { allowFail: true });
    await purgeProjects([{ project, dir }, { project: projectName(spare), dir: spare }]);
    for (const f of figures) process.stdout.write(`${f}\n`);
    process.stdout.write(`docker day-two wall time ${((Date.now() - started) / 1000).toFixed(0)} s; steps (s): ${formatTimings(timings)}\n`);
    if (archive) rmSync(archive, { force: true });
    removeTempDirs();
  }, 900_000);

  it('installs, starts the API with its key, loads patients; verify passes', async () => {
    const install = await cli(installArgs(siteInstall()));
    expect(install.code, `${install.out}\n${install.err}`).toBe(0);
    chownSync(platformDir, 1000, 1000);
    for (const f of readdirSync(join(platformDir, 'demo'))) chownSync(join(platformDir, 'demo', f), 1000, 1000);
    chownSync(join(platformDir, 'demo'), 1000, 1000);
    await docker([
      'run', '-d', '--name', platformName, '--network', `${project}_default`, '--network-alias', 'platform', '--user', '1000:1000',
      '-v', `${platformDir}:/platform:ro`, API_IMAGE, 'demo', '--platform-stand-in', '--listen', `0.0.0.0:${PLATFORM_PORT}`, '--dir', '/platform',
    ]);
    const consumer = await cli(['consumer', 'create', 'day-two', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    const data = join(spare, '..', `${SEED}-data-${process.pid}`);
    const gen = await runCli(['fhir', 'generate', '--patients', String(PATIENTS), '--seed', SEED, '--sizes', SIZES, '--out', data]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);
    // no --url: fhir load goes to the installation's own FHIR address, where HAPI is published (issue 27)
    const load = await cli(['fhir', 'load', join(data, '00-shared.json'), join(data, '01-patients.ndjson')]);
    rmSync(data, { recursive: true, force: true });
    expect(load.code, load.err).toBe(0);
    if (!REAL) {
      // The hapi stand-in copies its store into Postgres every 3 s and at a clean stop (real HAPI writes
      // through at once): a restart makes the loaded patients durable in HAPI's database before the backup.
      await docker(['restart', (await container('hapi')).Id], { timeout: 300_000 });
      const deadline = Date.now() + 300_000;
      while (!(await fhirAnswers())) {
        if (Date.now() > deadline) throw new Error('HAPI did not answer /fhir/metadata within 300 s of its restart');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    const verify = await cli(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);

    // day two on the engine's own Compose (issue 27): status names each container's PID, image and
    // version; logs prints a service's log through Compose, its container prefix cut
    const status = await cli(['status', '--json']);
    expect(status.code, status.err).toBe(0);
    const kong = (JSON.parse(status.out).result.components as Array<{ name: string; pid?: number; image?: string; version?: string }>).find((c) => c.name === 'kong');
    expect(kong?.pid).toBeGreaterThan(1);
    expect(`${kong?.image}:${kong?.version}`).toBe(readInstallConfig(dir).docker?.images.kong);
    const logs = await cli(['logs', 'kong', '--lines', '20']);
    expect(logs.code, logs.err).toBe(0);
    expect(logs.out.trim()).not.toBe('');
    expect(logs.out).not.toMatch(/^\S*kong[-_]1\s*\|/m);
  }, 1_800_000);

  it('the FHIR port (the FHIR door, issue 24): another local account gets /fhir/metadata and 401 for the rest; fhir load --dir still loads', async () => {
    const asNobody = async (path: string) =>
      (await execa('runuser', ['-u', 'nobody', '--', 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', `http://127.0.0.1:${ports.fhir}${path}`], { reject: false })).stdout;
    expect(await asNobody('/fhir/Patient')).toBe('401');
    expect(await asNobody('/fhir/metadata')).toBe('200');
    expect((statSync(join(installPaths(dir).secrets, 'fhir-door-token')).mode & 0o777).toString(8)).toBe('600');
    const data = tempDir('hapi-docker-day2-door-');
    writeFileSync(join(data, 'org.ndjson'), JSON.stringify({ resourceType: 'Organization', id: 'through-the-door', name: 'Through the door' }) + '\n');
    const load = await runCli(['--json', 'fhir', 'load', '--dir', dir, join(data, 'org.ndjson')]);
    expect(load.exitCode, String(load.stderr)).toBe(0);
    expect(JSON.parse(String(load.stdout)).result).toMatchObject({ bundles: 1, failed: 0 });
  }, 300_000);

  it('consumer rotate-key --write-env under a steady stream of POST /api/patients: no failed request, no restart', async () => {
    const apiBefore = await container('hospital-api');
    const keyBefore = readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY;
    const statuses: number[] = [];
    let rotating = true;
    // two platform clients, each sending the next request as soon as the last one answered
    const client = async (i: number): Promise<void> => {
      while (rotating) {
        const t = dataset.patients[i % PATIENTS]!;
        try {
          statuses.push((await postPatient(ports.api!, t.careId, tokenOf(tokens, t.careId))).status);
        } catch {
          statuses.push(-1); // a connection error counts as a failed request
        }
      }
    };
    const load = [client(0), client(1)];
    // the stream runs before, during and after the switch
    while (statuses.length < 4) await new Promise((r) => setImmediate(r));
    const rotate = await cli(['consumer', 'rotate-key', 'day-two', '--write-env', '--json']);
    const during = statuses.length;
    const more = during + 4;
    while (statuses.length < more) await new Promise((r) => setImmediate(r));
    rotating = false;
    await Promise.all(load);
    expect(rotate.code, `${rotate.out}\n${rotate.err}`).toBe(0);
    const result = JSON.parse(rotate.out).result as { revokedCredentialId: string | null; envWritten: boolean; key: string };
    expect(result.envWritten).toBe(true);
    expect(result.revokedCredentialId).not.toBeNull();
    const keyAfter = readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY;
    expect(keyAfter).toBe(result.key);
    expect(keyAfter).not.toBe(keyBefore);
    // every request answered 200, including those sent while the key switched
    expect(statuses.length).toBeGreaterThan(8);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    // the audit log the API container writes, read on the host by `logs audit`: whole JSON lines
    const audit = await cli(['logs', 'audit', '--lines', '4']);
    expect(audit.code, audit.err).toBe(0);
    const lines = audit.out.trim().split('\n');
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    figures.push(`rotate-key under load: ${statuses.length} requests, ${statuses.length - during} answered after the command returned (all 200)`);
    // the same container, never restarted: the key was reread on SIGHUP
    const apiAfter = await container('hospital-api');
    expect(apiAfter.Id).toBe(apiBefore.Id);
    expect(apiAfter.State?.StartedAt).toBe(apiBefore.State?.StartedAt);
    // and its answer came through the mounted status folder, with the new key's fingerprint (not the key)
    const status = readFileSync(join(installPaths(dir).docker, 'api-status', 'api-reload.json'), 'utf8');
    expect(status).not.toContain(result.key);
    expect(JSON.parse(status).gateway).toBe('ok');
  }, 600_000);

  it('cert renew: kong presents the new certificate without a restart; verify passes', async () => {
    const paths = installPaths(dir);
    const ca = readFileSync(paths.caCert, 'utf8');
    const kongBefore = await container('kong');
    const before = await presentedFingerprint(ca, ports.gatewayHttps!, '127.0.0.1');
    const renew = await cli(['cert', 'renew', '--json']);
    expect(renew.code, `${renew.out}\n${renew.err}`).toBe(0);
    expect(JSON.parse(renew.out).result.gatewayReloaded).toBe(true);
    const want = new X509Certificate(readFileSync(paths.gatewayCert)).fingerprint256;
    expect(want).not.toBe(before);
    expect(await presentedFingerprint(ca, ports.gatewayHttps!, '127.0.0.1')).toBe(want);
    const kongAfter = await container('kong');
    expect(kongAfter.Id).toBe(kongBefore.Id);
    expect(kongAfter.State?.StartedAt).toBe(kongBefore.State?.StartedAt);
    const verify = await cli(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
  }, 600_000);

  it('cert renew (issue 46): the running API seals its audit log with the renewed audit-seal certificate, no restart; openssl cms verifies the seal, audit verify passes across the change', async () => {
    const paths = installPaths(dir);
    const log = join(paths.docker, 'api-logs', 'audit.log');
    const seals = (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"phase":"seal"')) : []);
    /** The certificate that signed a seal line, as plain openssl reads it after checking it against the install's CA. */
    const signerOf = (line: string): string => {
      const d = tempDir('seal-');
      writeFileSync(join(d, 'seal.der'), Buffer.from((JSON.parse(line) as { cms: string }).cms, 'base64'));
      execFileSync('openssl', ['cms', '-verify', '-inform', 'DER', '-in', join(d, 'seal.der'), '-CAfile', paths.caCert, '-binary', '-signer', join(d, 'signer.pem'), '-out', join(d, 'statement')], { stdio: 'pipe' });
      return new X509Certificate(readFileSync(join(d, 'signer.pem'))).fingerprint256;
    };
    const api = await container('hospital-api');
    const oldSeal = new X509Certificate(readFileSync(paths.auditSealCert)).fingerprint256;
    const renew = await cli(['cert', 'renew', '--json']);
    expect(renew.code, `${renew.out}\n${renew.err}`).toBe(0);
    const newSeal = new X509Certificate(readFileSync(paths.auditSealCert)).fingerprint256;
    expect(newSeal).not.toBe(oldSeal);
    // lines after the renewal; their seal comes within SEAL_INTERVAL_MS (60 s)
    const before = seals().length;
    const t = dataset.patients[0]!;
    expect((await postPatient(ports.api!, t.careId, tokenOf(tokens, t.careId))).status).toBe(200);
    const t0 = Date.now();
    while (seals().length === before) {
      if (Date.now() - t0 > 150_000) throw new Error('no seal within 150 s of the last line');
      await new Promise((r) => setTimeout(r, 1000));
    }
    figures.push(`audit seal after cert renew: sealed by the new certificate ${((Date.now() - t0) / 1000).toFixed(0)} s after the line`);
    expect(signerOf(seals().at(-1)!)).toBe(newSeal);
    const after = await container('hospital-api');
    expect([after.Id, after.State?.StartedAt]).toEqual([api.Id, api.State?.StartedAt]);
    const audit = await cli(['audit', 'verify']);
    expect(audit.code, `${audit.out}\n${audit.err}`).toBe(0);
  }, 600_000);

  it('install --verify-every 30s (issue 46): two services without the engine socket write a signed, chained record on a gateway change; the API container\'s /metrics shows the gauges; off removes them', async () => {
    const paths = installPaths(dir);
    const records = (): string[] => readdirSync(paths.reports).filter((n) => /^acceptance-.*\.json$/.test(n)).sort();
    const rerun = installArgs(siteInstall()).filter((a) => a !== '--generate-ca');
    const install = await cli([...rerun, '--verify-every', '30s']);
    expect(install.code, `${install.out}\n${install.err}`).toBe(0);
    const kong = await container('kong');
    const run = await container('acceptance');
    const relay = await container('acceptance-relay');
    for (const c of [run, relay]) {
      const inspect = c as unknown as { Mounts: Array<{ Source: string; Destination: string }>; HostConfig: { CapDrop: string[]; Privileged: boolean; ReadonlyRootfs: boolean; NetworkMode: string }; Config: { User: string } };
      // no engine socket, no capability, a read-only root
      expect(inspect.Mounts.map((m) => m.Source).filter((src) => /docker\.sock|containerd/.test(src))).toEqual([]);
      expect(inspect.HostConfig.CapDrop).toEqual(['ALL']);
      expect([inspect.HostConfig.Privileged, inspect.HostConfig.ReadonlyRootfs]).toEqual([false, true]);
      // the install directory's owner (the installer), who alone reads the record-signing key
      expect(inspect.Config.User).toBe(`${statSync(dir).uid}:${statSync(dir).gid}`);
    }
    expect((relay as unknown as { HostConfig: { NetworkMode: string } }).HostConfig.NetworkMode).toBe(`container:${kong.Id}`);
    expect((run as unknown as { HostConfig: { NetworkMode: string } }).HostConfig.NetworkMode).toBe('host');
    expect(statSync(paths.signerKey).mode & 0o777).toBe(0o600);

    // a change of the gateway's configuration (a consumer): the next scheduled run records it
    const before = records();
    const consumer = await cli(['consumer', 'create', 'scheduled-probe']);
    expect(consumer.code, consumer.err).toBe(0);
    const t0 = Date.now();
    while (records().length === before.length) {
      if (Date.now() - t0 > 240_000) {
        const logs = await docker(['logs', '--tail', '60', run.Id], { allowFail: true });
        throw new Error(`no scheduled record within 240 s; acceptance log:\n${logs.out}\n${logs.err}`);
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
    figures.push(`scheduled acceptance (docker): a record ${((Date.now() - t0) / 1000).toFixed(0)} s after the gateway change`);
    const newest = records().at(-1)!;
    const doc = JSON.parse(readFileSync(join(paths.reports, newest), 'utf8')) as { result: string; testedAt: string };
    expect(doc.result).toBe('accepted');
    // written by the service: its log names it; the installer's file, like a record verify writes on the host
    const logs = await docker(['logs', run.Id]);
    expect(`${logs.out}\n${logs.err}`).toContain(`ACCEPTED: record ${join(paths.reports, newest)} (gateway configuration changed`);
    expect(statSync(join(paths.reports, newest)).uid).toBe(statSync(dir).uid);
    // signed and chained to the record before it
    const chain = await cli(['record', 'verify', '--chain', paths.reports]);
    expect(chain.code, `${chain.out}\n${chain.err}`).toBe(0);

    // the API container reads reports/ read-only: its /metrics shows the newest record
    const metrics = async (): Promise<string> => (await docker(['exec', (await container('hospital-api')).Id, 'node', '-e', 'const t = require("fs").readFileSync("/run/hospital-api/metrics-token", "utf8").trim(); fetch("http://127.0.0.1:9464/metrics", { headers: { authorization: `Bearer ${t}` } }).then(async (r) => process.stdout.write(await r.text()))'])).out;
    const text = await metrics();
    const newestNow = records().at(-1)!;
    expect(text).toContain(`hospital_api_acceptance_result{record="${newestNow}"} 1`);
    expect(text).toMatch(new RegExp(`^hospital_api_acceptance_last_run_timestamp_seconds\\{record="${newestNow.replace(/[.]/g, '\\.')}"\\} \\d+$`, 'm'));
    const api = await container('hospital-api');
    const write = await docker(['exec', api.Id, 'sh', '-c', `touch '${paths.reports}/x'`], { allowFail: true });
    expect(write.code).not.toBe(0);

    // off: both services go
    const off = await cli([...rerun, '--verify-every', 'off']);
    expect(off.code, `${off.out}\n${off.err}`).toBe(0);
    const left = (await containersOf(project)).map((c) => c.Config?.Labels?.['com.docker.compose.service']);
    expect(left).not.toContain('acceptance');
    expect(left).not.toContain('acceptance-relay');
  }, 900_000);

  it('cert renew --renew-ca: the API container trusts the new CA on SIGHUP, kong presents a certificate from it, neither restarts; records flow; verify passes', async () => {
    const paths = installPaths(dir);
    const oldCa = new X509Certificate(readFileSync(paths.caCert, 'utf8'));
    const oldCaKey = readFileSync(paths.caKey, 'utf8');
    const [apiBefore, kongBefore] = [await container('hospital-api'), await container('kong')];
    const renew = await cli(['cert', 'renew', '--renew-ca', '--json']);
    expect(renew.code, `${renew.out}\n${renew.err}`).toBe(0);
    const result = JSON.parse(renew.out).result as { gatewayReloaded: boolean; ca: { fingerprint256: string; generated: boolean } };
    expect(result.gatewayReloaded).toBe(true);
    expect(result.ca.generated).toBe(true);
    expect(result.ca.fingerprint256).not.toBe(oldCa.fingerprint256);
    // tls/ca.pem: the new CA first, the old one kept; the API container's copy is the same bundle
    const bundle = readFileSync(paths.caCert, 'utf8');
    const newCa = new X509Certificate(bundle);
    expect(newCa.fingerprint256).toBe(result.ca.fingerprint256);
    expect(bundle).toContain(oldCa.toString().trim());
    expect(readFileSync(join(paths.docker, 'api', 'tls', 'ca.pem'), 'utf8')).toBe(bundle);
    expect(readFileSync(paths.caKey, 'utf8')).not.toBe(oldCaKey);
    // the API container answered the SIGHUP trusting the new CA, and reached the gateway with it
    const status = JSON.parse(readFileSync(join(paths.docker, 'api-status', 'api-reload.json'), 'utf8')) as { caFingerprint: string; gateway: string };
    expect([status.caFingerprint, status.gateway]).toEqual([result.ca.fingerprint256, 'ok']);
    // kong presents a certificate issued by the new CA: a handshake trusting only the new CA succeeds
    const gatewayCert = new X509Certificate(readFileSync(paths.gatewayCert));
    expect(gatewayCert.checkIssued(newCa)).toBe(true);
    expect(await presentedFingerprint(newCa.toString(), ports.gatewayHttps!, '127.0.0.1')).toBe(gatewayCert.fingerprint256);
    const [apiAfter, kongAfter] = [await container('hospital-api'), await container('kong')];
    expect([apiAfter.Id, apiAfter.State?.StartedAt]).toEqual([apiBefore.Id, apiBefore.State?.StartedAt]);
    expect([kongAfter.Id, kongAfter.State?.StartedAt]).toEqual([kongBefore.Id, kongBefore.State?.StartedAt]);
    const t = dataset.patients[0]!;
    const res = await postPatient(ports.api!, t.careId, tokenOf(tokens, t.careId));
    expect(res.status).toBe(200);
    expect(res.resources.length).toBeGreaterThan(1);
    const verify = await cli(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
  }, 600_000);

  it('backup while serving: pg_dump of HAPI\'s and Kong\'s databases as parts of the manifest, with progress', async () => {
    const t = dataset.patients[0]!;
    const record = await postPatient(ports.api!, t.careId, tokenOf(tokens, t.careId));
    expect(record.status).toBe(200);
    expect(record.resources.length).toBeGreaterThan(5);
    recordBefore = sorted(record.resources);
    archive = join(spare, '..', `hospital-api-day2-${process.pid}.tar`);
    const backup = await cli(['backup', '--out', archive, '--json'], { env: BACKUP_ENV });
    expect(backup.code, `${backup.out}\n${backup.err}`).toBe(0);
    const result = JSON.parse(backup.out).result as { parts: Array<{ path: string; kind: string; bytes: number }> };
    const data = result.parts.filter((p) => p.kind === 'fhir-database' || p.kind === 'gateway-database').map((p) => [p.path, p.kind]);
    expect(data).toEqual([['postgres/hapi.dump', 'fhir-database'], ['postgres/kong.dump', 'gateway-database']]);
    expect(backup.err).toContain("HAPI FHIR's database: pg_dump inside hapi-database");
    // the stack kept serving
    expect((await postPatient(ports.api!, t.careId, tokenOf(tokens, t.careId))).status).toBe(200);
    const members: string[] = [];
    await tarList({ file: archive, onReadEntry: (e) => void members.push(e.path) });
    expect(members[0]).toBe('manifest.json');
    const manifest = readFileSync(archive, 'latin1');
    expect(manifest).not.toContain(readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY);
    // the runtime's own step: each clear-text dump is 0600 from its first byte, whatever the umask
    const into = tempDir('hapi-docker-day2-snapshot-');
    const umask = process.umask(0o000);
    try {
      const parts = await createDockerRuntime(dir, readInstallConfig(dir), { onProgress: () => {} }).snapshotData!(into, () => {});
      expect(parts.map((p) => [p.path, statSync(join(into, p.path)).mode & 0o777])).toEqual([['postgres/hapi.dump', 0o600], ['postgres/kong.dump', 0o600]]);
    } finally {
      process.umask(umask);
    }
  }, 600_000);

  it('a damaged archive or a wrong passphrase changes nothing: the target stays empty, no volume is made', async () => {
    const damaged = `${archive}.damaged`;
    const bytes = readFileSync(archive);
    // one byte in the middle of HAPI's database dump, found by its member's tar header (512-byte aligned)
    const manifest = manifestOf(archive);
    const part = manifest.parts.find((p) => p.path === 'postgres/hapi.dump')!;
    let header = -1;
    for (let at = 0; at < bytes.length; at += 512) if (bytes.toString('latin1', at, at + part.member.length + 1) === `${part.member}\0`) header = at;
    expect(header).toBeGreaterThan(0);
    const at = header + 512 + Math.floor(part.cipherBytes / 2);
    bytes[at] = bytes[at]! ^ 0xff;
    writeFileSync(damaged, bytes);
    const bad = await cli(['restore', damaged, '--json'], { env: BACKUP_ENV, on: spare });
    expect(bad.code).not.toBe(0);
    expect(JSON.parse(bad.out).error.code).toBe('ERR_RESTORE_BAD_ARCHIVE');
    const wrong = await cli(['restore', archive, '--json'], { env: { HOSPITAL_API_BACKUP_PASSPHRASE: 'not the passphrase at all' }, on: spare });
    expect(wrong.code).not.toBe(0);
    expect(JSON.parse(wrong.out).error.code).toBe('ERR_RESTORE_DECRYPT');
    expect(readdirSync(spare)).toEqual([]);
    expect(await volumesOf(projectName(spare))).toEqual([]);
    expect(await containersOf(projectName(spare))).toEqual([]);
    rmSync(damaged);
  }, 300_000);

  it('a pg_restore that fails part way: the error names it; the containers, volumes and files the restore made go; the serving stack is untouched', async () => {
    // an archive whose HAPI dump passes every check (manifest, digest, pg_dump's magic) but is not a dump:
    // the real runtime's snapshot, with that one part replaced before it is sealed
    const rt = createDockerRuntime(dir, readInstallConfig(dir), { onProgress: () => {} });
    const broken = { ...rt, snapshotData: async (into: string, progress: (text: string) => void) => {
      const parts = await rt.snapshotData!(into, progress);
      writeFileSync(join(into, 'postgres', 'hapi.dump'), Buffer.concat([Buffer.from('PGDMP'), randomBytes(64 * 1024)]), { mode: 0o600 });
      return parts;
    } };
    const badArchive = `${archive}.bad-dump.tar`;
    await createBackup(broken, dir, { out: badArchive, env: { ...process.env, ...BACKUP_ENV } }, () => {});
    const res = await cli(['restore', badArchive, '--json'], { env: BACKUP_ENV, on: spare });
    rmSync(badArchive, { force: true });
    expect(res.code, `${res.out}\n${res.err}`).not.toBe(0);
    const error = JSON.parse(res.out).error as { code: string; message: string };
    expect(error.code).toBe('ERR_INSTALL_DOCKER');
    expect(error.message).toContain('pg_restore');
    expect(res.err).toContain('restore failed: removing the containers and volumes it made');
    expect(readdirSync(spare)).toEqual([]);
    expect(await volumesOf(projectName(spare))).toEqual([]);
    expect(await containersOf(projectName(spare))).toEqual([]);
    // the other project (the serving stack) kept its volumes and answers
    expect(await volumesOf(project)).toEqual([`${project}_hapi-data`, `${project}_kong-data`]);
    const t = dataset.patients[0]!;
    expect((await postPatient(ports.api!, t.careId, tokenOf(tokens, t.careId))).status).toBe(200);
  }, 600_000);

  it('backup → down → backup of the stopped stack → wipe → restore refused while the old volumes exist → down --volumes → restore → up: verify passes, the record reads back equal', async () => {
    // every volume the engine has now: down and up must add none (issue 27: hapi-pidns, on the postgres
    // image whose VOLUME made an anonymous volume per container, left one behind at each down)
    // every volume but another compose project's: tier files run side by side on one engine, and a stack
    // starting meanwhile makes volumes that are not the restore's (seen: another file's hapi-data, kong-data)
    const allVolumes = async () =>
      (await docker(['volume', 'ls', '--format', '{{.Name}}\t{{.Label "com.docker.compose.project"}}'])).out
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split('\t') as [string, string | undefined])
        .filter(([, owner]) => !owner || owner === project)
        .map(([name]) => name);
    const before = new Set(await allVolumes());
    await platformNetwork('disconnect');
    const down = await cli(['down']);
    expect(down.code, down.err).toBe(0);
    // a stopped stack is backed up too: its databases start for the dump and stop again
    const stoppedArchive = `${archive}.stopped.tar`;
    const stoppedBackup = await cli(['backup', '--out', stoppedArchive, '--json'], { env: BACKUP_ENV });
    expect(stoppedBackup.code, `${stoppedBackup.out}\n${stoppedBackup.err}`).toBe(0);
    expect(stoppedBackup.err).toContain('starting hapi-database and kong-database for the dump');
    expect((await containersOf(project)).filter((c) => c.State?.Running)).toEqual([]);
    const composeFile = join(spare, '..', `compose-${process.pid}.yaml`);
    copyFileSync(join(installPaths(dir).docker, 'compose.yaml'), composeFile);
    const volumes = await volumesOf(project);
    expect(volumes).toEqual([`${project}_hapi-data`, `${project}_kong-data`]);
    // the wipe: every file of the install directory
    for (const f of readdirSync(dir)) rmSync(join(dir, f), { recursive: true, force: true });

    // an empty directory whose compose project still has its databases is not empty: refused, nothing changed
    const refused = await cli(['restore', archive, '--json'], { env: BACKUP_ENV });
    expect(refused.code).not.toBe(0);
    const err = JSON.parse(refused.out).error as { code: string; message: string };
    expect(err.code).toBe('ERR_RESTORE_NOT_EMPTY');
    expect(err.message).toContain(`${project}_kong-data`);
    expect(readdirSync(dir)).toEqual([]);
    expect(await volumesOf(project)).toEqual(volumes);

    await compose(['down', '--volumes'], composeFile);
    rmSync(composeFile);
    expect(await volumesOf(project)).toEqual([]);
    // from the stopped stack's archive: the record must read back as it was while serving
    const restore = await cli(['restore', stoppedArchive, '--json'], { env: BACKUP_ENV });
    rmSync(stoppedArchive);
    expect(restore.code, `${restore.out}\n${restore.err}`).toBe(0);
    // restored, not started: the databases stopped again
    expect((await containersOf(project)).filter((c) => c.State?.Running)).toEqual([]);
    const up = await cli(['up']);
    expect(up.code, `${up.out}\n${up.err}`).toBe(0);
    const named = new Set(await volumesOf(project));
    expect((await allVolumes()).filter((v) => !before.has(v) && !named.has(v))).toEqual([]);
    await platformNetwork('connect');
    const verify = await cli(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
    const t = dataset.patients[0]!;
    const after = await postPatient(ports.api!, t.careId, tokenOf(tokens, t.careId));
    expect(after.status).toBe(200);
    expect(sorted(after.resources)).toEqual(recordBefore);
    // with progress, database by database
    expect(restore.err).toContain("HAPI FHIR's database: pg_restore");
    expect(restore.err).toContain("Kong's database: restored in");
  }, 1_800_000);

  it('upgrade from the previous install format takes its automatic backup through the databases', async () => {
    const paths = installPaths(dir);
    const config = JSON.parse(readFileSync(paths.installJson, 'utf8')) as { formatVersion: number };
    writeFileSync(paths.installJson, JSON.stringify({ ...config, formatVersion: 1 }, null, 2) + '\n', { mode: 0o600 });
    const upgrade = await cli(['upgrade', '--json'], { env: BACKUP_ENV });
    expect(upgrade.code, `${upgrade.out}\n${upgrade.err}`).toBe(0);
    const result = JSON.parse(upgrade.out).result as { from: number; to: number; backup: string };
    expect(result.from).toBe(1);
    expect(result.to).toBe(config.formatVersion);
    expect(existsSync(result.backup)).toBe(true);
    expect(upgrade.err).toContain("Kong's database: pg_dump inside kong-database");
    const t = dataset.patients[1]!;
    expect((await postPatient(ports.api!, t.careId, tokenOf(tokens, t.careId))).status).toBe(200);
    const members: string[] = [];
    await tarList({ file: result.backup, onReadEntry: (e) => void members.push(e.path) });
    const manifest = manifestOf(result.backup);
    expect(manifest.parts.filter((p) => p.kind.endsWith('-database')).map((p) => p.path)).toEqual(['postgres/hapi.dump', 'postgres/kong.dump']);
    expect(members.length).toBe(manifest.parts.length + 1);
  }, 600_000);
});

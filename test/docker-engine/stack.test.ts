/**
 * Issue 10 end to end on a real Docker engine, through the real CLI:
 * install → consumer create → verify (all pass) → POST /api/patients through
 * the gateway returns a multi-page record → down / up keeps the data →
 * reinstall is idempotent (every provisioning step unchanged) → a key with `$`,
 * `"` and `\` still works → the admin port answers on no host address →
 * published ports bound as configured → reinstall with lost secrets is refused.
 *
 * The site is installed as a hospital installs it, under a host name that is
 * not loopback (issue 27): `hospital.test`, the engine host's own address on a
 * bridge this file makes from 198.51.100.0/24 (site.ts SITE_HOST), resolved by
 * the CLI alone. The gateway and the API are published on that address, FHIR
 * stays on 127.0.0.1, and verify passes without opening FHIR. The platform's
 * calls come from a machine on the hospital's LAN: a network namespace the
 * test plugs into that bridge (198.51.100.2), which reaches the site by name.
 *
 * The images are the tier's (scripts/docker-engine.mjs): a real Postgres from
 * Debian's postgresql-15, and kong / hapi stand-ins that keep the real images'
 * interface (no curl in kong, no shell in hapi, the dialect rule of HAPI 8) with
 * the project's native gateway and FHIR server inside. They are passed with the
 * install image flags; the real tags stay the defaults. Containers talk to each
 * other; the test talks to 127.0.0.1 and the site address only. Without an
 * engine every test is skipped with one plain line.
 */
import { chownSync, cpSync, readdirSync, readFileSync, rmSync, statSync, appendFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { presentedFingerprint } from '../../src/install/cert-renew.js';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { installArgs, type InstallArgsOptions } from '../helpers/install-args.js';
import { removeTempDirs } from '../helpers/tmp.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';
import type { ContainerInspect } from '../../src/runtime/docker/parse.js';
import { docker, engineAnswers, sayNoEngine } from './engine.js';
import { API_IMAGE, containersOf, createSiteAddress, formatTimings, IMAGE_FLAGS, lanCurl, prepareTier, purgeProjects, removeSiteAddress, runningContainer, SITE_HOST, siteHostsFile, syntheticIds, tierSite } from './site.js';
import { tcpOpens } from '../helpers/tcp-opens.js';
import { recordFixture } from './record.js';
import { checkMetrics, hasPromtool } from '../monitoring/promtool.js';
import { tokenOf } from '../helpers/patients.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();
const SEED = 'docker-engine-tier';
const SIZES = '10-150';
const PATIENTS = 2;
const PAGE_SIZE = 20;
const PLATFORM_PORT = 8088;
/** Printable, no spaces; `$`, `"` and `\` are what Compose's env-file syntax would change. */
const SPECIAL_KEY = 'k$HOME"q\\x\\n$$-0123456789abcdef';

const { dir, platformDir, project, platformName, timings, cli } = tierSite('hapi-docker-tier', siteHostsFile());
let ports: Record<string, number> = {};

/** The first install makes the CA; reruns keep the TLS material (no TLS flag). */
const siteInstall = (first = false): InstallArgsOptions => ({
  runtime: 'docker', host: SITE_HOST.name, bindAddress: SITE_HOST.address, generateCa: first, platformUrl: `http://platform:${PLATFORM_PORT}`,
  ports: { api: ports.api!, fhir: ports.fhir!, gatewayHttps: ports.gatewayHttps! }, extra: IMAGE_FLAGS,
});

const containers = () => containersOf(project);
const container = (service: string) => runningContainer(project, service);

/** The platform's call, from a machine on the hospital's LAN (site.ts SITE_LAN) to the site's name. */
async function postFromLan(careId: string, token: string) {
  const res = await lanCurl(`http://${SITE_HOST.name}:${ports.api}/api/patients`, {
    port: ports.api!,
    args: ['-H', 'content-type: application/json'],
    data: JSON.stringify({ platformCareId: careId, token }),
  });
  expect(res.code, res.body).toBe(0);
  return { status: res.status, body: JSON.parse(res.body) as { resources?: Array<{ resource: { resourceType: string; id: string; identifier?: Array<{ system?: string; value?: string }> } }> } };
}


const dataset = generateDataset({ patients: PATIENTS, seed: SEED, sizes: SIZES });
let tokens: Array<{ careId: string; token: string }> = [];

describe.skipIf(!engine)('docker runtime on a real engine (issue 10)', () => {
  beforeAll(async () => {
    ({ ports, tokens } = await prepareTier({ platformDir, timings }, dataset.patients.map((p) => p.careId)));
    await createSiteAddress();
  }, 3_600_000);

  afterAll(async () => {
    if (!engine) return;
    await docker(['rm', '-f', platformName], { allowFail: true });
    // the tier's own volumes go with it (`down --volumes` is the documented purge)
    await purgeProjects([{ project, dir }]);
    await removeSiteAddress();
    process.stdout.write(`docker tier timings (s): ${formatTimings(timings)}\n`);
    removeTempDirs();
  }, 600_000);

  it('installs on the engine; the gateway is provisioned through the admin API inside kong, which has no curl', async () => {
    const r = await cli([...installArgs(siteInstall(true)), '--json']);
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    const result = JSON.parse(r.out).result as { runtime: string; provisioning: Array<{ name: string; change: string }>; endpoints: Record<string, string> };
    expect(result.runtime).toBe('docker');
    // the endpoint table names the site for what is published on it, and FHIR where it is published: loopback
    expect(result.endpoints.apiBase).toBe(`http://${SITE_HOST.name}:${ports.api}`);
    expect(result.endpoints.keyAuthBase).toBe(`https://${SITE_HOST.name}:${ports.gatewayHttps}/fhir-api-key-auth`);
    expect(result.endpoints.fhirBase).toBe(`http://127.0.0.1:${ports.fhir}/fhir`);
    expect(result.provisioning.map((s) => s.change)).toEqual(Array(result.provisioning.length).fill('created'));
    expect(result.provisioning.length).toBe(10);
    // the kong image has no curl, as the official one (Kong/docker-kong ubuntu/Dockerfile purges it)
    const kong = await container('kong');
    const curl = await docker(['exec', kong.Id, 'sh', '-c', 'command -v curl'], { allowFail: true });
    expect(curl.code).not.toBe(0);
    // HAPI runs on the Postgres dialect: its schema is in Postgres, as the real image leaves it (HAPI 8 logs
    // the dialect at DEBUG only, so no log line is asked for; with the H2 dialect the schema is never made)
    const db = await container('hapi-database');
    const schema = await docker(['exec', db.Id, 'psql', '-U', 'hapi', '-d', 'hapi', '-tAc', "SELECT to_regclass('public.hfj_resource') IS NOT NULL"]);
    expect(schema.out.trim()).toBe('t');
    // the API is held back until the hospital has created its key
    expect((await containers()).some((c) => c.Config?.Labels?.['com.docker.compose.service'] === 'hospital-api')).toBe(false);
  }, 1_800_000);

  it('consumer create --write-env starts the API and returns once it answers; verify passes every check', async () => {
    // the platform stand-in on the project's network: the API reaches it as http://platform:8088
    chownSync(platformDir, 1000, 1000);
    for (const f of readdirSync(join(platformDir, 'demo'))) chownSync(join(platformDir, 'demo', f), 1000, 1000);
    chownSync(join(platformDir, 'demo'), 1000, 1000);
    await docker([
      'run', '-d', '--name', platformName, '--network', `${project}_default`, '--network-alias', 'platform', '--user', '1000:1000',
      '-v', `${platformDir}:/platform:ro`, API_IMAGE, 'demo', '--platform-stand-in', '--listen', `0.0.0.0:${PLATFORM_PORT}`, '--dir', '/platform',
    ]);
    appendFileSync(installPaths(dir).apiEnv, `FHIR_PAGE_SIZE=${PAGE_SIZE}\n`);
    const consumer = await cli(['consumer', 'create', 'tier-hospital', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    // returned only after the API answered its health check
    const health = await request(`http://${SITE_HOST.address}:${ports.api}/api/health-check`);
    expect(health.statusCode).toBe(200);
    expect(await health.body.json()).toEqual({});
    // never root
    const api = await container('hospital-api');
    expect((await docker(['exec', api.Id, 'id', '-u'])).out.trim()).not.toBe('0');

    const data = join(dir, 'tier-data');
    const gen = await runCli(['fhir', 'generate', '--patients', String(PATIENTS), '--seed', SEED, '--sizes', SIZES, '--out', data]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);
    // no --url: the installation's own FHIR address (127.0.0.1, where it is published), not the site name
    const load = await cli(['fhir', 'load', join(data, '00-shared.json'), join(data, '01-patients.ndjson')]);
    expect(load.code, load.err).toBe(0);

    const status = await cli(['status', '--json']);
    expect(status.code, status.err).toBe(0);
    const comps = (JSON.parse(status.out).result.components as Array<{ name: string; state: string }>).map((c) => [c.name, c.state]);
    expect(comps).toEqual([['fhir-door', 'up'], ['hapi', 'up'], ['hapi-database', 'up'], ['hapi-pidns', 'up'], ['hapi-watchdog', 'up'], ['hospital-api', 'up'], ['kong', 'up'], ['kong-database', 'up']]);
    const verify = await cli(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
    recordFixture('container-inspect.json', await containers());
  }, 900_000);

  it('POST /api/patients reads a multi-page record through the gateway', async () => {
    const patient = [...dataset.patients].sort((a, b) => b.size - a.size)[0]!;
    expect(patient.size).toBeGreaterThan(2 * PAGE_SIZE);
    const token = tokenOf(tokens, patient.careId);
    const { status, body } = await postFromLan(patient.careId, token);
    expect(status).toBe(200);
    const got = syntheticIds(body.resources!);
    const missing = [patient.patient, ...patient.groups.flatMap((g) => g.resources)].map((r) => r.id).filter((id) => !got.has(id));
    expect(missing).toEqual([]);
  }, 120_000);

  it('down / up keeps the data (Postgres volumes)', async () => {
    const patient = dataset.patients[0]!;
    const token = tokenOf(tokens, patient.careId);
    const before = await postFromLan(patient.careId, token);
    expect(before.status).toBe(200);
    // the platform stand-in is not part of the project but stays attached to its network (issue 48): down
    // stops the stack, keeps the network for it and says so; up finds the network and the stand-in on it
    const down = await cli(['down']);
    expect(down.code, down.err).toBe(0);
    expect(down.err).toContain(`network ${project}_default stays because ${platformName} (not part of this installation) is attached to it`);
    expect(await containers()).toEqual([]);
    const up = await cli(['up']);
    expect(up.code, up.err).toBe(0);
    const after = await postFromLan(patient.careId, token);
    expect(after.status).toBe(200);
    expect(after.body.resources!.length).toBe(before.body.resources!.length);
  }, 900_000);

  it('a second install is idempotent: every provisioning step unchanged', async () => {
    const r = await cli([...installArgs(siteInstall()), '--json']);
    expect(r.code, r.err).toBe(0);
    const steps = JSON.parse(r.out).result.provisioning as Array<{ change: string }>;
    expect(steps.length).toBe(10);
    expect(steps.map((s) => s.change)).toEqual(Array(10).fill('unchanged'));
  }, 900_000);

  it('a key with $, " and \\ reaches the API unchanged and still opens the gateway', async () => {
    const r = await cli(['consumer', 'create', 'tier-special', '--key', SPECIAL_KEY, '--write-env']);
    expect(r.code, r.err).toBe(0);
    expect(readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY).toBe(SPECIAL_KEY);
    const patient = dataset.patients[1]!;
    const token = tokenOf(tokens, patient.careId);
    const res = await postFromLan(patient.careId, token);
    expect(res.status).toBe(200);
    expect(res.body.resources!.length).toBeGreaterThanOrEqual(patient.size);
    // and the settings are in no container's environment
    const api = await container('hospital-api');
    expect(JSON.stringify((JSON.parse((await docker(['inspect', api.Id])).out) as ContainerInspect[])[0])).not.toContain('0123456789abcdef');
  }, 300_000);

  it('day two on a site bound to its LAN address (issue 48): rotate-key --write-env and cert renew reach the API and the gateway there; logs gateway is kong', async () => {
    // nothing listens on 127.0.0.1 for the API or the gateway: both are published on the site address only
    expect(await tcpOpens('127.0.0.1', ports.api!)).toBe(false);
    expect(await tcpOpens('127.0.0.1', ports.gatewayHttps!)).toBe(false);
    const oldKey = readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY;
    const rotate = await cli(['consumer', 'rotate-key', 'tier-special', '--write-env', '--json']);
    expect(rotate.code, `${rotate.out}\n${rotate.err}`).toBe(0);
    expect(JSON.parse(rotate.out).result.revokedCredentialId).toEqual(expect.any(String));
    expect(readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY).not.toBe(oldKey);
    const patient = dataset.patients[1]!;
    expect((await postFromLan(patient.careId, tokenOf(tokens, patient.careId))).status).toBe(200);

    const paths = installPaths(dir);
    const ca = readFileSync(paths.caCert, 'utf8');
    const before = await presentedFingerprint(ca, ports.gatewayHttps!, SITE_HOST.name, SITE_HOST.address);
    const renew = await cli(['cert', 'renew', '--json']);
    expect(renew.code, `${renew.out}\n${renew.err}`).toBe(0);
    expect(JSON.parse(renew.out).result.gatewayReloaded).toBe(true);
    const want = new X509Certificate(readFileSync(paths.gatewayCert)).fingerprint256;
    expect(want).not.toBe(before);
    expect(await presentedFingerprint(ca, ports.gatewayHttps!, SITE_HOST.name, SITE_HOST.address)).toBe(want);

    // the hints' role name: `logs gateway` is the kong service's log on docker
    const logs = await cli(['logs', 'gateway', '-n', '20']);
    expect(logs.code, logs.err).toBe(0);
    const kongLogs = await docker(['logs', (await container('kong')).Id]);
    const kongLines = new Set(`${kongLogs.out}\n${kongLogs.err}`.split('\n').map((l) => l.trim()).filter(Boolean));
    // Compose prints its own "Attaching to …" first; every other line is kong's
    const shown = logs.out.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('Attaching to'));
    expect(shown.length).toBeGreaterThan(0);
    expect(shown.filter((l) => !kongLines.has(l))).toEqual([]);
  }, 600_000);

  it('the admin port answers on no host address; published ports are bound as configured: the site address, FHIR on 127.0.0.1', async () => {
    const all = await containers();
    const bindings = all.flatMap((c) =>
      Object.entries(c.NetworkSettings?.Ports ?? {}).flatMap(([target, list]) => (list ?? []).map((b) => `${c.Config?.Labels?.['com.docker.compose.service']} ${target} ${b.HostIp}:${b.HostPort}`)),
    );
    expect(bindings.sort()).toEqual([
      `fhir-door 8080/tcp 127.0.0.1:${ports.fhir}`,
      `hospital-api 9000/tcp ${SITE_HOST.address}:${ports.api}`,
      `kong 8443/tcp ${SITE_HOST.address}:${ports.gatewayHttps}`,
    ]);
    // the site address reaches the gateway, never FHIR
    expect(await tcpOpens(SITE_HOST.address, ports.gatewayHttps!)).toBe(true);
    expect(await tcpOpens(SITE_HOST.address, ports.fhir!)).toBe(false);
    // and so it is from a machine on the LAN: the gateway by its name, over HTTPS checked against the
    // hospital's CA, refuses a call without the key and answers one with it; the FHIR port is closed
    const gateway = `https://${SITE_HOST.name}:${ports.gatewayHttps}/fhir-api-key-auth/metadata`;
    // `-D -`: the answer's headers are what curl prints; the body goes nowhere
    const tls = { port: ports.gatewayHttps!, args: ['--cacert', installPaths(dir).caCert, '-D', '-', '-o', '/dev/null'] };
    const refused = await lanCurl(gateway, tls);
    expect(refused.status).toBe(401);
    const key = readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY!;
    const answered = await lanCurl(gateway, { ...tls, header: `apikey: ${key}\n` });
    expect(answered.status).toBe(200);
    // HSTS on Kong's own answer and on the proxied one (issue 48: KONG_NGINX_PROXY_ADD_HEADER in the compose file)
    for (const r of [refused, answered]) expect(r.body).toMatch(/^strict-transport-security: max-age=63072000\r?$/im);
    const fhir = await lanCurl(`http://${SITE_HOST.address}:${ports.fhir}/fhir/metadata`, { port: ports.fhir! });
    expect(fhir.code).toBe(7); // curl: failed to connect
    // from the host, the kong container's own address: the proxy answers, the admin API does not
    const kong = await container('kong');
    const ip = Object.values((kong.NetworkSettings as { Networks?: Record<string, { IPAddress?: string }> }).Networks ?? {})[0]?.IPAddress;
    expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(await tcpOpens(ip!, 8443)).toBe(true);
    expect(await tcpOpens(ip!, 8001)).toBe(false);
    // yet it answers inside the container, which is how install reached it
    const inside = await docker(['exec', kong.Id, 'perl', '-MHTTP::Tiny', '-e', 'print HTTP::Tiny->new->get("http://127.0.0.1:8001/status")->{status}']);
    expect(inside.out).toBe('200');
  }, 120_000);

  it.skipIf(!hasPromtool)("Kong's status listener serves the provisioned prometheus plugin's families; the API's metrics pass promtool check metrics (issue 26)", async () => {
    // Without --monitoring both listen on 127.0.0.1 inside their containers (Kong's default status_listen).
    const kong = await container('kong');
    const gateway = await docker(['exec', kong.Id, 'perl', '-MHTTP::Tiny', '-e', 'my $r = HTTP::Tiny->new->get("http://127.0.0.1:8007/metrics"); print $r->{status} == 200 ? $r->{content} : "status $r->{status}"']);
    expect(gateway.out).toMatch(/^kong_http_requests_total\{service="fhir-api-key-auth",route="fhir-api-key-auth-route",code="200",source="service",workspace="default",consumer=""\} \d+$/m);
    const checkedGateway = await checkMetrics(`${gateway.out}\n`);
    // Kong's own names are what promtool flags (exit 3: lint findings, not a parse error).
    expect(checkedGateway.exitCode).toBe(3);
    expect(checkedGateway.output).not.toMatch(/error|parse/i);
    const api = await container('hospital-api');
    // /metrics answers the holder of the token install made (issue 45), which the container reads from its file
    const scraped = await docker(['exec', api.Id, 'node', '-e', 'const t = require("fs").readFileSync("/run/hospital-api/metrics-token", "utf8").trim(); fetch("http://127.0.0.1:9464/metrics", { headers: { authorization: `Bearer ${t}` } }).then(async (r) => process.stdout.write(await r.text()))']);
    expect(scraped.out).toContain('hospital_api_certificate_remaining_seconds{certificate="fhir-ca-trusted"}');
    const checkedApi = await checkMetrics(`${scraped.out}\n`);
    expect(checkedApi.output).toBe('');
    expect(checkedApi.exitCode).toBe(0);
  }, 120_000);

  it('a reinstall that lost its secrets is refused with the purge named, and changes no data', async () => {
    const secrets = installPaths(dir).secrets;
    const saved = `${secrets}.saved`;
    cpSync(secrets, saved, { recursive: true });
    rmSync(secrets, { recursive: true });
    const r = await cli([...installArgs(siteInstall()), '--json']);
    expect(r.code).not.toBe(0);
    const err = JSON.parse(r.out).error as { code: string; message: string; hint: string };
    expect(err.code).toBe('ERR_INSTALL_DOCKER_STALE_VOLUMES');
    expect(err.message).toContain(`${project}_kong-data`);
    expect(err.hint).toContain('down --volumes');
    // with the secrets back, the same install works and the data is still there
    rmSync(secrets, { recursive: true });
    cpSync(saved, secrets, { recursive: true });
    expect(statSync(join(secrets, 'kong-pg-password')).isFile()).toBe(true);
    const again = await cli(installArgs(siteInstall()));
    expect(again.code, again.err).toBe(0);
    const patient = dataset.patients[0]!;
    const res = await postFromLan(patient.careId, tokenOf(tokens, patient.careId));
    expect(res.status).toBe(200);
    expect(readFileSync(join(secrets, 'kong-pg-password'), 'utf8')).toBe(readFileSync(join(saved, 'kong-pg-password'), 'utf8'));
  }, 900_000);
});

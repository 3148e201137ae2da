/**
 * Issue 10, the interfaces stack.test.ts does not reach, on a real Docker engine
 * through the real CLI (one stack, the tier's images as in stack.test.ts):
 *
 * 1. PLATFORM_CA_FILE: the platform stand-in served over HTTPS with a
 *    certificate of its own CA (not the hospital's); with PLATFORM_CA_FILE the
 *    record comes back, without it the API fails closed (ERR_API_PLATFORM_UNAVAILABLE).
 * 2. HAPI's server address strategy: the links HAPI writes for $everything pages,
 *    seen through the gateway, name the gateway's address (FHIR_BASE_URL), and
 *    the API follows every page; the hapi image honours HAPI's strategies.
 * 3. Kong settings reach the gateway: no `kong/x.y.z` in Server or Via
 *    (KONG_HEADERS), the worker count, anonymous reports off.
 * 4. scripts/docker-smoke.sh, the hospital's pre-flight, run for real against
 *    this stack: it passes, and it fails naming the fact on a published admin port.
 * 5. .github/workflows/docker-e2e.yml runs these tier files on the real images
 *    and calls only scripts that exist (runs without an engine too).
 *
 * Containers talk to each other and to 127.0.0.1 only. Without an engine the
 * engine tests are skipped with one plain line.
 */
import { appendFileSync, chownSync, chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { Agent, request } from 'undici';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { removeTempDirs } from '../helpers/tmp.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { IMAGES, KONG_WORKERS } from '../../src/runtime/container/images.js';
import { generateCa, issueCertificate } from '../../src/tls/pki.js';
import { docker, engineAnswers, sayNoEngine, TIER_IMAGES } from './engine.js';
import { API_IMAGE, formatTimings, IMAGE_FLAGS, prepareTier, purgeProjects, REAL, REPO, runningContainer, syntheticIds, tierSite } from './site.js';
import { postPatient, tokenOf } from '../helpers/patients.js';

const WORKFLOW = join(REPO, '.github', 'workflows', 'docker-e2e.yml');
const SMOKE = join(REPO, 'scripts', 'docker-smoke.sh');

describe('.github/workflows/docker-e2e.yml (it cannot run here: its content is checked)', () => {
  interface Step {
    name?: string;
    run?: string;
    uses?: string;
    env?: Record<string, string>;
  }
  const wf = parse(readFileSync(WORKFLOW, 'utf8')) as { jobs: Record<string, { steps: Step[] }> };
  const steps = Object.values(wf.jobs).flatMap((j) => j.steps);
  const runs = steps.filter((s) => typeof s.run === 'string');

  it('runs every tier file with HOSPITAL_API_DOCKER_E2E_IMAGES=real', () => {
    const tierFiles = readdirSync(join(REPO, 'test', 'docker-engine')).filter((f) => f.endsWith('.test.ts')).map((f) => `test/docker-engine/${f}`);
    expect(tierFiles).toContain('test/docker-engine/stack.test.ts');
    expect(tierFiles).toContain('test/docker-engine/interface.test.ts');
    const real = runs.filter((s) => s.env?.HOSPITAL_API_DOCKER_E2E_IMAGES === 'real');
    expect(real.length).toBeGreaterThan(0);
    // vitest takes its positional arguments as path filters (a file matches when its path contains one)
    const filters = real.flatMap((s) => [...s.run!.matchAll(/(?:npx\s+)?vitest\s+run\s+([^\n&|;]+)/g)].flatMap((m) => m[1]!.trim().split(/\s+/).filter((a) => !a.startsWith('-'))));
    expect(filters.length).toBeGreaterThan(0);
    for (const f of tierFiles) expect(filters.some((filter) => f.includes(filter.replace(/^\.\//, ''))), `${f} is not run by the workflow`).toBe(true);
    // no stand-in flag anywhere in that job: the real images are the defaults
    expect(JSON.stringify(steps)).not.toMatch(/--(kong|hapi|postgres)-image|hospital-api-tier\//);
  });

  it('pulls exactly the images install renders by default, before the tests', () => {
    const pull = runs.find((s) => /docker pull/.test(s.run!));
    expect(pull).toBeDefined();
    for (const image of Object.values(IMAGES)) expect(pull!.run).toContain(image);
    const refs = [...pull!.run!.matchAll(/\b([a-z0-9./-]+:[A-Za-z0-9._-]+)/g)].map((m) => m[1]!);
    expect(new Set(refs)).toEqual(new Set(Object.values(IMAGES)));
    expect(steps.indexOf(pull!)).toBeLessThan(steps.findIndex((s) => s.env?.HOSPITAL_API_DOCKER_E2E_IMAGES === 'real'));
  });

  it('calls only scripts that exist in the repository (and npm scripts package.json defines)', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const called = runs.flatMap((s) => [...s.run!.matchAll(/(?:^|[\s;&|(])((?:\.\/)?scripts\/[\w./-]+)/g)].map((m) => m[1]!.replace(/^\.\//, '')));
    expect(called).toContain('scripts/docker-smoke.sh');
    for (const script of called) {
      expect(existsSync(join(REPO, script)), `${script} does not exist`).toBe(true);
      // run directly (not through bash/node): it must be executable
      expect(statSync(join(REPO, script)).mode & 0o111, `${script} is not executable`).not.toBe(0);
    }
    const npmRuns = runs.flatMap((s) => [...s.run!.matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]!));
    for (const name of npmRuns) expect(pkg.scripts[name], `npm run ${name}`).toBeDefined();
    // actions are pinned to a major version at least
    for (const s of steps.filter((x) => x.uses)) expect(s.uses).toMatch(/^[\w-]+\/[\w-]+@v\d+/);
  });
});

const engine = await engineAnswers();
if (!engine) sayNoEngine();
const POSTGRES_IMAGE = REAL ? IMAGES.postgres : TIER_IMAGES.postgres;

const SEED = 'docker-interface-tier';
const SIZES = '45-90';
const PATIENTS = 2;
const PAGE_SIZE = 20;
const PLATFORM_PORT = 8443;
/** What the API container is given (src/install/files.ts): the gateway's key-auth route as the project network names it. */
const FHIR_BASE_URL = 'https://kong:8443/fhir-api-key-auth';

const { dir, platformDir, project, platformName, timings, cli } = tierSite('hapi-docker-iface');
const brokenName = `${project}-broken-kong`;
let ports: Record<string, number> = {};
const dataset = generateDataset({ patients: PATIENTS, seed: SEED, sizes: SIZES });
let tokens: Array<{ careId: string; token: string }> = [];
/** The platform's own CA (not the hospital's), as a host file install is pointed at. */
const platformCaFile = join(platformDir, 'platform-ca.pem');

const container = (service: string) => runningContainer(project, service);

const largest = () => [...dataset.patients].sort((a, b) => b.size - a.size)[0]!;

/** Chowns a tree to the uid the containers started with --user 1000:1000 run as. */
function chownTree(path: string): void {
  chownSync(path, 1000, 1000);
  if (statSync(path).isDirectory()) for (const f of readdirSync(path)) chownTree(join(path, f));
}

/**
 * The platform's HTTPS front, run in a container from the API image: the
 * project's platform stand-in (validate-access) behind a TLS server with the
 * platform CA's certificate for the name `platform`.
 */
const PLATFORM_TLS = `
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { createServer } from 'node:tls';
import { buildPlatformStandIn } from '/app/dist/demo/platform-stand-in.js';
const app = buildPlatformStandIn('/platform');
await app.listen({ host: '127.0.0.1', port: 8088 });
createServer({ cert: readFileSync('/platform/tls/server.pem'), key: readFileSync('/platform/tls/server.key') }, (socket) => {
  const plain = connect(8088, '127.0.0.1');
  socket.pipe(plain).pipe(socket);
  socket.on('error', () => plain.destroy());
  plain.on('error', () => socket.destroy());
}).listen(${PLATFORM_PORT}, '0.0.0.0', () => process.stderr.write('platform stand-in on https://platform:${PLATFORM_PORT}\\n'));
`;

describe.skipIf(!engine)('docker runtime interfaces on a real engine (issue 10)', () => {
  beforeAll(async () => {
    ({ ports, tokens } = await prepareTier({ platformDir, timings }, dataset.patients.map((p) => p.careId)));
    const ca = generateCa({ commonName: 'Platform Test CA' });
    const server = issueCertificate(ca, { commonName: 'platform', hosts: ['platform'], usage: 'server' });
    mkdirSync(join(platformDir, 'tls'));
    writeFileSync(join(platformDir, 'tls', 'server.pem'), server.certPem);
    writeFileSync(join(platformDir, 'tls', 'server.key'), server.keyPem, { mode: 0o600 });
    writeFileSync(join(platformDir, 'serve-tls.mjs'), PLATFORM_TLS);
    writeFileSync(platformCaFile, ca.certPem);
    chownTree(platformDir);
    chmodSync(platformDir, 0o755);
  }, 3_600_000);

  afterAll(async () => {
    if (!engine) return;
    // -v: the postgres image the broken "kong" ran from declares a VOLUME
    await docker(['rm', '-f', '-v', platformName, brokenName], { allowFail: true });
    await purgeProjects([{ project, dir }]);
    process.stdout.write(`docker interface tier timings (s): ${formatTimings(timings)}\n`);
    removeTempDirs();
  }, 600_000);

  it('installs with PLATFORM_API_URL on https; the rendered compose file sets what Kong and HAPI 8 read', async () => {
    const r = await cli([
      'install', '--runtime', 'docker', '--host', '127.0.0.1', '--generate-ca', '--platform-url', `https://platform:${PLATFORM_PORT}`, '--identifier-system', 'urn:hospital-api:platform-care-id',
      '--api-port', String(ports.api), '--fhir-port', String(ports.fhir), '--gateway-https-port', String(ports.gatewayHttps),
      ...IMAGE_FLAGS,
      '--json',
    ]);
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    const compose = parse(readFileSync(join(installPaths(dir).docker, 'compose.yaml'), 'utf8'), { merge: true }) as {
      services: Record<string, { environment: Record<string, string> }>;
    };
    const hapiEnv = compose.services.hapi!.environment;
    // StarterJpaConfig: a hapi.fhir.server_address would win over the apache strategy (a fixed address, wrong for
    // callers on the host); AppProperties is @ConfigurationProperties("hapi.fhir"), bound from this variable
    expect(hapiEnv.HAPI_FHIR_USE_APACHE_ADDRESS_STRATEGY).toBe('true');
    expect(Object.keys(hapiEnv).filter((k) => /server[._]?address/i.test(k))).toEqual([]);
    // what the kong container was really started with
    const kong = await container('kong');
    const env = Object.fromEntries((kong.Config as { Env?: string[] }).Env!.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
    expect({ headers: env.KONG_HEADERS, workers: env.KONG_NGINX_WORKER_PROCESSES, reports: env.KONG_ANONYMOUS_REPORTS }).toEqual({
      headers: 'off',
      workers: String(KONG_WORKERS),
      reports: 'off',
    });
    const hapi = await container('hapi');
    expect((hapi.Config as { Env?: string[] }).Env).toContain('HAPI_FHIR_USE_APACHE_ADDRESS_STRATEGY=true');
  }, 1_800_000);

  it('PLATFORM_CA_FILE: the platform over HTTPS with its own CA; the record comes back, every page followed', async () => {
    await docker([
      'run', '-d', '--name', platformName, '--network', `${project}_default`, '--network-alias', 'platform', '--user', '1000:1000',
      '-v', `${platformDir}:/platform:ro`, '--entrypoint', 'node', API_IMAGE, '/platform/serve-tls.mjs',
    ]);
    // the hospital's settings file names the CA by its host path; the runtime copies it into the API's folder
    appendFileSync(installPaths(dir).apiEnv, `PLATFORM_CA_FILE=${platformCaFile}\nFHIR_PAGE_SIZE=${PAGE_SIZE}\n`);
    const consumer = await cli(['consumer', 'create', 'iface-hospital', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    expect(readEnvFile(join(installPaths(dir).docker, 'api', 'hospital-api.env')).PLATFORM_CA_FILE).toBe('/run/hospital-api/tls/platform-ca.pem');
    expect(readFileSync(join(installPaths(dir).docker, 'api', 'tls', 'platform-ca.pem'), 'utf8')).toBe(readFileSync(platformCaFile, 'utf8'));

    const data = join(dir, 'iface-data');
    const gen = await runCli(['fhir', 'generate', '--patients', String(PATIENTS), '--seed', SEED, '--sizes', SIZES, '--out', data]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);
    // --dir: the installation's FHIR address, through its FHIR door with the install's token
    const load = await runCli(['fhir', 'load', join(data, '00-shared.json'), join(data, '01-patients.ndjson'), '--dir', dir]);
    expect(load.exitCode, String(load.stderr)).toBe(0);

    const patient = largest();
    expect(patient.size).toBeGreaterThan(2 * PAGE_SIZE);
    const { status, body } = await postPatient(ports.api!, patient.careId, tokenOf(tokens, patient.careId));
    expect(status, JSON.stringify(body.error)).toBe(200);
    const got = syntheticIds(body.resources!);
    const missing = [patient.patient, ...patient.groups.flatMap((g) => g.resources)].map((r) => r.id).filter((id) => !got.has(id));
    expect(missing).toEqual([]);
  }, 900_000);

  it("HAPI's links, seen through the gateway, name the gateway's address (FHIR_BASE_URL); the API's record has every page", async () => {
    const patient = largest();
    const key = readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY!;
    // from inside the API container, as the API calls it: https://kong:8443 checked against the hospital CA
    const walk = `
      const base = ${JSON.stringify(FHIR_BASE_URL)};
      const get = async (u) => {
        const r = await fetch(u, { headers: { apikey: ${JSON.stringify(key)}, accept: 'application/fhir+json' } });
        if (r.status !== 200) throw new Error(u + ' answered ' + r.status);
        return r.json();
      };
      const found = await get(base + '/Patient?identifier=' + encodeURIComponent(${JSON.stringify(patient.careId)}));
      let url = base + '/Patient/' + found.entry[0].resource.id + '/$everything?_count=${PAGE_SIZE}';
      const links = [];
      const ids = new Set();
      let pages = 0;
      while (url && pages < 100) {
        const b = await get(url);
        pages++;
        for (const l of b.link ?? []) links.push(l.relation + ' ' + l.url);
        for (const e of b.entry ?? []) ids.add(e.resource.resourceType + '/' + e.resource.id);
        url = (b.link ?? []).find((l) => l.relation === 'next')?.url;
      }
      process.stdout.write(JSON.stringify({ links, pages, count: ids.size }));
    `;
    const api = await container('hospital-api');
    const r = await docker(['exec', '-i', '-e', 'NODE_EXTRA_CA_CERTS=/run/hospital-api/tls/ca.pem', api.Id, 'node', '--input-type=module', '-'], { input: walk });
    const seen = JSON.parse(r.out) as { links: string[]; pages: number; count: number };
    expect(seen.pages).toBeGreaterThanOrEqual(3);
    const self = seen.links.filter((l) => l.startsWith('self '));
    const next = seen.links.filter((l) => l.startsWith('next '));
    expect(self.length).toBe(seen.pages);
    expect(next.length).toBe(seen.pages - 1);
    const underBase = (l: string) => {
      const url = l.slice(l.indexOf(' ') + 1);
      return url === FHIR_BASE_URL || url.startsWith(`${FHIR_BASE_URL}/`) || url.startsWith(`${FHIR_BASE_URL}?`);
    };
    expect(seen.links.filter((l) => !underBase(l))).toEqual([]);
    // the API, reading the same record through the gateway, returned every resource of every page
    const { status, body } = await postPatient(ports.api!, patient.careId, tokenOf(tokens, patient.careId));
    expect(status).toBe(200);
    expect(body.resources!.length).toBe(seen.count);
  }, 300_000);

  it("the hapi image applies HAPI's address strategies: the caller's Host without X-Forwarded-Host, else X-Forwarded-* from any caller", async () => {
    const patient = largest();
    const base = `http://127.0.0.1:${ports.fhir}/fhir`;
    const search = async (headers: Record<string, string>) => {
      // through the FHIR door, which passes the caller's Host and X-Forwarded-* on and keeps its token
      const token = readFileSync(join(installPaths(dir).secrets, 'fhir-door-token'), 'utf8').trim();
      const res = await request(`${base}/Patient?identifier=${encodeURIComponent(patient.careId)}`, { headers: { accept: 'application/fhir+json', authorization: `Bearer ${token}`, ...headers } });
      expect(res.statusCode).toBe(200);
      const b = (await res.body.json()) as { link?: Array<{ relation: string; url: string }> };
      return b.link!.find((l) => l.relation === 'self')!.url;
    };
    // ApacheProxyAddressStrategy falls back to the incoming request (IncomingRequestAddressStrategy)
    expect(await search({})).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${ports.fhir}/fhir/Patient\\?`));
    // Kong's headers (kong/runloop/handler.lua): host without port, the port apart, the stripped route as prefix,
    // which replaces HAPI's own /fhir (hapi-fhir ApacheProxyAddressStrategy: replacePath(prefix))
    expect(
      await search({ 'x-forwarded-host': 'gw.hospital.example', 'x-forwarded-proto': 'https', 'x-forwarded-port': '9443', 'x-forwarded-prefix': '/fhir-api' }),
    ).toMatch(/^https:\/\/gw\.hospital\.example:9443\/fhir-api\/Patient\?/);
  }, 120_000);

  it('through the gateway no Server or Via names kong/x.y.z (KONG_HEADERS=off); kong runs the configured workers', async () => {
    const key = readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY!;
    const dispatcher = new Agent({ connect: { ca: readFileSync(installPaths(dir).caCert, 'utf8') } });
    const gw = `https://127.0.0.1:${ports.gatewayHttps}`;
    try {
      const answers = [
        await request(`${gw}/fhir-api-key-auth/metadata`, { headers: { apikey: key }, dispatcher }), // proxied: HAPI's answer
        await request(`${gw}/fhir-api-key-auth/metadata`, { dispatcher }), // Kong's own 401
        await request(`${gw}/no-such-route`, { dispatcher }), // Kong's own 404
      ];
      expect(answers.map((a) => a.statusCode)).toEqual([200, 401, 404]);
      for (const a of answers) {
        await a.body.dump();
        expect(String(a.headers.server ?? '')).not.toMatch(/kong\/\d/i);
        expect(String(a.headers.via ?? '')).not.toMatch(/kong\/\d/i);
      }
    } finally {
      await dispatcher.close();
    }
    // the worker count, seen from the engine (the image has no ps): Kong's nginx workers (the stand-in's
    // gateway is one process)
    const kong = await container('kong');
    const top = (await docker(['top', kong.Id])).out.split('\n');
    if (REAL) expect(top.filter((l) => /nginx: worker process/.test(l)).length).toBe(KONG_WORKERS);
    // anonymous reports: the stand-in states the setting it started with (the real Kong logs nothing observable)
    if (!REAL) expect((await docker(['logs', kong.Id])).err).toMatch(/anonymous_reports=off headers=off/);
  }, 120_000);

  it('without PLATFORM_CA_FILE the API fails closed: the platform certificate is refused, no data goes out', async () => {
    const env = readFileSync(installPaths(dir).apiEnv, 'utf8');
    writeFileSync(installPaths(dir).apiEnv, env.split('\n').filter((l) => !l.startsWith('PLATFORM_CA_FILE=')).join('\n'), { mode: 0o600 });
    // a new consumer's key restarts the API with the changed settings
    const consumer = await cli(['consumer', 'create', 'iface-hospital-2', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    expect(existsSync(join(installPaths(dir).docker, 'api', 'tls', 'platform-ca.pem'))).toBe(false);
    const patient = largest();
    const { status, body } = await postPatient(ports.api!, patient.careId, tokenOf(tokens, patient.careId));
    expect(status).toBe(502);
    expect(body.error?.code).toBe('ERR_API_PLATFORM_UNAVAILABLE');
    // the reason is the TLS verification, not the network: the platform answered with an unknown CA's certificate
    expect(body.error?.message).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT/);
    expect(body.resources).toBeUndefined();
    expect(JSON.stringify(body)).not.toContain(tokenOf(tokens, patient.careId));
  }, 600_000);

  it('scripts/docker-smoke.sh passes against this stack, and fails naming the fact when an admin port is published', async () => {
    const t0 = Date.now();
    const images = REAL ? [] : ['--kong-image', TIER_IMAGES.kong, '--hapi-image', TIER_IMAGES.hapi, '--postgres-image', TIER_IMAGES.postgres];
    const ok = await execa('bash', [SMOKE, '--dir', dir, ...images], { reject: false, timeout: 900_000, stdin: 'ignore' });
    timings.smoke = Date.now() - t0;
    const out = String(ok.stdout);
    expect(ok.exitCode, `${out}\n${String(ok.stderr)}`).toBe(0);
    expect(out.split('\n').filter((l) => l.startsWith('FAIL'))).toEqual([]);
    for (const fact of [
      /^PASS {2}docker-compose 1\.29|^PASS {2}Compose v2/m,
      /^PASS {2}.* has no curl/m,
      /^PASS {2}.* has perl with HTTP::Tiny/m,
      /^PASS {2}.* has 'kong health'/m,
      /^PASS {2}HAPI (logs 'HHH0\d+: Using dialect: ca\.uhn\.fhir\.jpa\.model\.dialect\.HapiFhirPostgresDialect'|created its schema)/m,
      /^PASS {2}.* has no shell/m,
      /^PASS {2}Kong's admin port 8001 is published on no host address$/m,
      /^PASS {2}published ports are bound as install chose \(bind 127\.0\.0\.1, FHIR 127\.0\.0\.1\)$/m,
      /^docker-smoke: all checks passed$/m,
    ]) {
      expect(out).toMatch(fact);
    }
    // it left nothing behind: no container, no volume of its throw-away Postgres, no network
    expect((await docker(['ps', '-aq', '--filter', 'name=hospital-api-smoke-'])).out.trim()).toBe('');
    expect((await docker(['volume', 'ls', '-q', '--filter', 'name=hospital-api-smoke-'])).out.trim()).toBe('');
    expect((await docker(['network', 'ls', '-q', '--filter', 'name=hospital-api-smoke-'])).out.trim()).toBe('');

    // a broken fact: a "kong" of another project publishing 8001 on the host (on the project's network: the
    // tier's engine has no default bridge)
    await docker([
      'run', '-d', '--name', brokenName, '--network', `${project}_default`, '--label', `com.docker.compose.project=${project}-broken`,
      '--label', 'com.docker.compose.service=kong', '-p', '127.0.0.1::8001', '--entrypoint', 'sleep', POSTGRES_IMAGE, 'infinity',
    ]);
    const bad = await execa('bash', [SMOKE, '--install-only', '--project', `${project}-broken`], { reject: false, timeout: 300_000, stdin: 'ignore' });
    expect(bad.exitCode, String(bad.stdout)).toBe(1);
    expect(String(bad.stdout)).toMatch(/^FAIL {2}Kong's admin port 8001 is published on the host: kong 8001\/tcp 127\.0\.0\.1:\d+$/m);
    expect(String(bad.stdout)).toMatch(/^docker-smoke: 1 check\(s\) failed$/m);
    // and the real stack, checked the same quick way, still passes
    const again = await execa('bash', [SMOKE, '--install-only', '--dir', dir], { reject: false, timeout: 300_000, stdin: 'ignore' });
    expect(again.exitCode, String(again.stdout)).toBe(0);
  }, 1_800_000);
});

/**
 * Issues 11 and 12 on the docker runtime, on a real Docker engine: the
 * broken-install table (test/helpers/broken-install-cases.ts) against one
 * docker stack (the tier's images, passed with the install image flags, as in
 * stack.test.ts), installed through the real CLI. This file is the docker
 * adapter: how a docker stack is broken and repaired — Kong's admin API reached
 * as the product reaches it (`docker exec` into kong,
 * src/runtime/container/admin.ts), a container stopped, another server answering
 * as `hapi` or on the API port, Kong recreated with its admin API published on
 * every host address, certificates applied by the runtime's restart.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { findCompose } from '../../src/runtime/container/compose.js';
import { createDockerRuntime } from '../../src/runtime/docker/index.js';
import type { ContainerInspect } from '../../src/runtime/docker/parse.js';
import { projectName } from '../../src/runtime/container/project.js';
import { readInstallConfig } from '../../src/install-dir/install-config.js';
import { installPaths } from '../../src/install-dir/layout.js';
import type { Runtime } from '../../src/runtime/types.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { freePorts } from '../../src/util/port-check.js';
import { brokenInstallCases, hostAddresses, type BrokenInstallSite } from '../helpers/broken-install-cases.js';
import { runCli } from '../helpers/cli.js';
import { installArgs, type InstallArgsOptions } from '../helpers/install-args.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';
import { buildImages, docker, engineAnswers, sayNoEngine, TIER_IMAGES } from './engine.js';
import { tcpOpens } from '../helpers/tcp-opens.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();

const dir = tempDir('hapi-docker-broken-');
const scratch = tempDir('hapi-docker-broken-scratch-');
const project = projectName(dir);
const network = `${project}_default`;
const standInName = `${project}-not-hapi`;
let ports = { api: 0, fhir: 0, gatewayHttps: 0, gatewayAdmin: 0 };
let runtime: Runtime;
const started = performance.now();
const timings: string[] = [];

async function timed<T>(label: string, run: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await run();
  } finally {
    timings.push(`${label} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
}

async function containers(): Promise<ContainerInspect[]> {
  const ids = (await docker(['ps', '-aq', '--filter', `label=com.docker.compose.project=${project}`])).out.split('\n').filter(Boolean);
  return ids.length ? (JSON.parse((await docker(['inspect', ...ids])).out) as ContainerInspect[]) : [];
}

async function container(service: string): Promise<ContainerInspect> {
  const c = (await containers()).find((x) => x.Config?.Labels?.['com.docker.compose.service'] === service && x.Config?.Labels?.['com.docker.compose.oneoff'] !== 'True');
  if (!c) throw new Error(`no ${service} container`);
  return c;
}

/** Polls every 500 ms until `probe` holds (the event that matters), or fails after `ms` naming `what`. */
const waitUntil = (what: string, probe: () => Promise<boolean>, ms = 180_000) => until(probe, { what, timeoutMs: ms, intervalMs: 500 });

async function metadataType(): Promise<string | null> {
  try {
    const res = await request(`http://127.0.0.1:${ports.fhir}/fhir/metadata`, { headersTimeout: 5000, bodyTimeout: 5000 });
    const body = (await res.body.json().catch(() => null)) as { resourceType?: string } | null;
    return res.statusCode === 200 ? (body?.resourceType ?? null) : null;
  } catch {
    return null;
  }
}

async function apiAnswer(): Promise<string | null> {
  try {
    const res = await request(`http://127.0.0.1:${ports.api}/api/health-check`, { headersTimeout: 3000, bodyTimeout: 3000 });
    return res.statusCode === 200 ? await res.body.text() : (await res.body.dump(), null);
  } catch {
    return null;
  }
}

/** docker-compose / docker compose on the install's compose file, plus `extra` files. */
async function compose(args: string[], extra: string[] = []): Promise<void> {
  const found = await findCompose();
  if (!found) throw new Error('no compose');
  const [bin, ...prefix] = found.argv as [string, ...string[]];
  const files = [join(installPaths(dir).docker, 'compose.yaml'), ...extra].flatMap((f) => ['-f', f]);
  const res = await execa(bin, [...prefix, '-p', project, ...files, ...args], { reject: false, timeout: 600_000, stdin: 'ignore' });
  if (res.exitCode !== 0) throw new Error(`compose ${args.join(' ')}: ${String(res.stderr).slice(-2000)}`);
}

/** A node server run from the hapi stand-in image on the project network (`alias` there), published on `hostPort`. */
async function runStandIn(containerPort: number, hostPort: number | null, server: string, alias?: string): Promise<void> {
  const publish = hostPort === null ? [] : ['-p', `127.0.0.1:${hostPort}:${containerPort}`];
  await docker(['run', '-d', '--name', standInName, '--network', network, ...(alias ? ['--network-alias', alias] : []), ...publish,
    '--entrypoint', '/usr/local/bin/node', TIER_IMAGES.hapi, '-e', server], { timeout: 300_000 });
}

/** The hapi container stopped; the repair starts it and waits for its metadata. */
async function stopHapi(): Promise<{ restart: () => Promise<void> }> {
  const hapi = await container('hapi');
  await docker(['stop', hapi.Id]);
  return {
    async restart() {
      await docker(['start', hapi.Id]);
      await waitUntil('hapi metadata after start', async () => (await metadataType()) === 'CapabilityStatement');
    },
  };
}

/** The tier's install command; issue 23's cases rerun it (with --json) to repair what is install's. */
function siteInstall(): InstallArgsOptions {
  return {
    runtime: 'docker', dir, host: '127.0.0.1', platformUrl: 'http://platform:8088', ports,
    extra: ['--kong-image', TIER_IMAGES.kong, '--hapi-image', TIER_IMAGES.hapi, '--postgres-image', TIER_IMAGES.postgres, '--api-image', TIER_IMAGES.api],
  };
}

const site: BrokenInstallSite = {
  runtime: 'docker',
  dir,
  get ports() {
    return ports;
  },
  consumer: 'broken-tier',
  apiKey: () => readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY!,
  apiComponent: 'hospital-api',
  serverHosts: ['127.0.0.1', 'localhost', 'kong'],
  internalHosts: ['kong'],
  secretFile: { path: join(installPaths(dir).docker, 'secrets', 'kong-pg-password'), shown: 'docker/secrets/kong-pg-password' },
  verifyTimeoutMs: 300_000,
  // Kong's admin API, reached as the product reaches it (docker exec + perl inside kong)
  admin: (method, path, body) => runtime.admin(method, path, body),
  async reinstall() {
    const r = await runCli([...installArgs(siteInstall()), '--json'], { timeout: 900_000 });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    return String(r.stdout);
  },
  restartGateway: () => timed('kong recreate', () => runtime.restart('gateway')),
  async impersonateApi(body) {
    const api = await container('hospital-api');
    await docker(['stop', api.Id]);
    const server = [
      "require('node:http').createServer((req, res) => {",
      `  res.writeHead(200, { 'content-type': 'application/json' }).end(${JSON.stringify(body)});`,
      '}).listen(9000);',
    ].join('\n');
    const repair = async () => {
      await docker(['rm', '-f', standInName], { allowFail: true });
      await docker(['start', api.Id]);
      await waitUntil('the API answering {} again', async () => (await apiAnswer()) === '{}');
      await waitUntil('the API container healthy', async () => (await container('hospital-api')).State?.Health?.Status === 'healthy');
    };
    try {
      // published where the API was, as another program on that port would be
      await runStandIn(9000, ports.api, server);
      await waitUntil('the stand-in on the API port', async () => (await apiAnswer()) === body);
    } catch (err) {
      await repair();
      throw err;
    }
    return repair;
  },
  async impersonateFhir() {
    const hapi = await stopHapi();
    // on the project network as `hapi`, unpublished like HAPI: the gateway reaches it, and the host through the FHIR door
    const server = [
      "require('node:http').createServer((req, res) => {",
      "  const body = req.url.endsWith('/metadata') ? { resourceType: 'OperationOutcome', issue: [] } : { resourceType: 'Bundle', type: 'searchset' };",
      "  res.writeHead(200, { 'content-type': 'application/fhir+json' }).end(JSON.stringify(body));",
      '}).listen(8080);',
    ].join('\n');
    const repair = async () => {
      await docker(['rm', '-f', standInName], { allowFail: true });
      await hapi.restart();
    };
    try {
      await runStandIn(8080, null, server, 'hapi');
      await waitUntil('the stand-in on the FHIR port', async () => (await metadataType()) === 'OperationOutcome');
    } catch (err) {
      await repair();
      throw err;
    }
    return repair;
  },
  async stopFhir() {
    return (await stopHapi()).restart;
  },
  async weakenGatewayTls(settings) {
    // Kong reads KONG_SSL_* (kong.conf.default ssl_cipher_suite, ssl_ciphers): an override file's environment for kong
    const override = join(scratch, 'tls-weakened.yaml');
    writeFileSync(override, ['services:', '  kong:', '    environment:', ...Object.entries(settings).map(([k, v]) => `      ${k}: ${JSON.stringify(v)}`), ''].join('\n'));
    await timed('kong recreate', () => compose(['up', '-d', '--no-deps', '--force-recreate', 'kong'], [override]));
    await waitUntil('kong healthy with the weakened TLS', async () => (await container('kong')).State?.Health?.Status === 'healthy');
    // the product's restart recreates kong from the install's compose file alone (intermediate)
    return () => timed('kong recreate', () => runtime.restart('gateway'));
  },
  async exposeAdmin() {
    const addresses = hostAddresses();
    expect(addresses.length).toBeGreaterThan(0);
    // what the original deployment's compose file did: admin listening on all container addresses, published on the host
    const override = join(scratch, 'admin-exposed.yaml');
    writeFileSync(override, ['services:', '  kong:', '    environment:', '      KONG_ADMIN_LISTEN: "0.0.0.0:8001"', '    ports:', `      - "0.0.0.0:${ports.gatewayAdmin}:8001"`, ''].join('\n'));
    const repair = async () => {
      // the product's restart recreates kong from the install's compose file alone
      await timed('kong recreate', () => runtime.restart('gateway'));
      expect(await tcpOpens(addresses[0]!, ports.gatewayAdmin)).toBe(false);
    };
    await timed('kong recreate', () => compose(['up', '-d', '--no-deps', '--force-recreate', 'kong'], [override]));
    try {
      // the defect is real: the admin API answers on the host's own address
      await waitUntil('the admin API on the host address', async () => {
        try {
          const res = await request(`http://${addresses[0]}:${ports.gatewayAdmin}/services`, { headersTimeout: 3000 });
          await res.body.dump();
          return res.statusCode === 200;
        } catch {
          return false;
        }
      });
      // the admin API answers before the container's healthcheck has run; components-up would fail on "starting"
      await waitUntil('the recreated kong healthy', async () => (await container('kong')).State?.Health?.Status === 'healthy');
    } catch (err) {
      await repair();
      throw err;
    }
    return { address: addresses[0]!, only: false, repair };
  },
  async fhirSpellings() {
    const hapi = await container('hapi');
    const networks = Object.values(hapi.NetworkSettings?.Networks ?? {});
    const ip = networks[0]?.IPAddress;
    expect(ip, 'hapi has an address on the project network').toBeTruthy();
    // Docker's embedded DNS answers for a container's name as for its service's (an alias on the network)
    const name = (hapi.Name ?? '').replace(/^\//, '');
    expect(name).toBeTruthy();
    const urls = [
      { spelling: "HAPI's container address", url: `http://${ip}:8080/fhir` },
      { spelling: `the container's name ${name} (a network alias)`, url: `http://${name}:8080/fhir` },
      { spelling: 'the FHIR door (forwards to HAPI)', url: 'http://fhir-door:8080/fhir' },
    ];
    return { urls, targets: [`${ip}:8080`] };
  },
  async fhirDataElsewhere() {
    const name = `${project}-fhir-mirror`;
    const server = [
      "require('node:http').createServer((req, res) => {",
      "  res.writeHead(200, { 'content-type': 'application/fhir+json' }).end(JSON.stringify({ resourceType: 'Bundle', type: 'searchset', entry: [] }));",
      '}).listen(8081);',
    ].join('\n');
    // on the project network under a name of its own: not HAPI, not the door
    await docker(['run', '-d', '--name', name, '--network', network, '--network-alias', 'fhir-mirror', '--entrypoint', '/usr/local/bin/node', TIER_IMAGES.hapi, '-e', server], { timeout: 300_000 });
    return { url: 'http://fhir-mirror:8081/fhir', repair: async () => void (await docker(['rm', '-f', name], { allowFail: true })) };
  },
  async containerIp(service) {
    const ip = Object.values((((await container(service)).NetworkSettings ?? {}) as { Networks?: Record<string, { IPAddress?: string }> }).Networks ?? {})[0]?.IPAddress;
    if (!ip) throw new Error(`${service} container has no address`);
    return ip;
  },
  async containerUid(service) {
    return Number((await docker(['exec', (await container(service)).Id, 'id', '-u'])).out.trim());
  },
};

describe.skipIf(!engine)('a broken docker installation never gets an ACCEPTED record (issues 11, 12)', () => {
  beforeAll(async () => {
    await timed('images', () => buildImages());
    const [api, fhir, gatewayHttps, gatewayAdmin] = (await freePorts(4)) as [number, number, number, number];
    ports = { api, fhir, gatewayHttps, gatewayAdmin };
    const install = await timed('install', () =>
      runCli(installArgs(siteInstall()), { timeout: 1_800_000 }),
    );
    expect(install.exitCode, `${String(install.stdout)}\n${String(install.stderr)}`).toBe(0);
    // the API starts once the hospital has its key (no platform is needed for its health check)
    const consumer = await timed('consumer create', () => runCli(['consumer', 'create', 'broken-tier', '--write-env', '--dir', dir], { timeout: 900_000 }));
    expect(consumer.exitCode, String(consumer.stderr)).toBe(0);
    runtime = createDockerRuntime(dir, readInstallConfig(dir), { onProgress: () => {} });
  }, 3_600_000);

  afterAll(async () => {
    if (!engine) return;
    await docker(['rm', '-f', standInName], { allowFail: true });
    await compose(['down', '--volumes', '--remove-orphans']).catch((err: unknown) => process.stderr.write(`${String(err)}\n`));
    process.stdout.write(`docker broken-install tier: ${((performance.now() - started) / 1000).toFixed(1)} s (${timings.join(', ')})\n`);
    removeTempDirs();
  }, 600_000);

  brokenInstallCases('docker', () => site, 900_000);
});

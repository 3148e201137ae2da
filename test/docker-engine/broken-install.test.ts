/**
 * Issues 11 and 12 on the docker runtime, on a real Docker engine: a signed
 * ACCEPTED record must be impossible to get from a broken docker installation.
 *
 * One docker stack (the tier's images, passed with the install image flags, as
 * in stack.test.ts), installed and verified ACCEPTED through the real CLI. Then,
 * one defect at a time, the installation is broken for real the way each check
 * exists to catch — plugins removed or a route renamed through Kong's admin API
 * (reached as the product reaches it: `docker exec` into kong,
 * src/runtime/docker/admin.ts), a container stopped, another server answering
 * as `hapi`, Kong recreated with its admin API published on every host address,
 * a wrong-host gateway certificate, a database password copy left 0644 — and
 * `hospital-api verify` must name exactly the failing checks, exit non-zero, and
 * write a signed record (verifiable, intact) that says REJECTED. Each case
 * repairs what it broke; the exact failing set of the next case proves the
 * repair held, and the last case shows the repaired stack ACCEPTED again.
 *
 * Issue 12 on docker: the provisioned routes take credentials over HTTPS only
 * (Kong's plain HTTP port answers 426), and the files the containers read are
 * 0600 in 0700 folders, owned by the uid of the container that reads them.
 */
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyRecordFile } from '../../src/record/check-file.js';
import { findCompose } from '../../src/runtime/docker/compose.js';
import { createDockerRuntime } from '../../src/runtime/docker/index.js';
import type { ContainerInspect } from '../../src/runtime/docker/parse.js';
import { projectName } from '../../src/runtime/docker/render.js';
import { readInstallConfig } from '../../src/install-dir/install-config.js';
import { installPaths } from '../../src/install-dir/layout.js';
import type { Runtime } from '../../src/runtime/types.js';
import { generateCa, issueCertificate, type KeyAndCert } from '../../src/tls/pki.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { freePort } from '../../src/util/port-check.js';
import { runCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { buildImages, docker, engineAnswers, sayNoEngine, TIER_IMAGES } from './engine.js';
import { tcpOpens } from './site.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();

interface RecordedCheck {
  id: string;
  status: string;
  mandatory: boolean;
  summary: string;
  detail: string;
  httpStatus?: number;
}

const dir = tempDir('hapi-docker-broken-');
const scratch = tempDir('hapi-docker-broken-scratch-');
const project = projectName(dir);
const network = `${project}_default`;
const standInName = `${project}-not-hapi`;
let ports = { api: 0, fhir: 0, gatewayHttps: 0, gatewayAdmin: 0 };
let runtime: Runtime;
const started = performance.now();
const timings: string[] = [];

const HTTPS_PROBES = ['key-auth-metadata', 'key-auth-no-key', 'key-auth-wrong-key', 'basic-auth-required'];

async function timed<T>(label: string, run: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    return await run();
  } finally {
    timings.push(`${label} ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
}

/** Kong's admin API, reached as the product reaches it (docker exec + perl inside kong). */
async function admin(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; body: any }> {
  return runtime.admin(method, path, body);
}

async function pluginOf(service: string, name: string): Promise<{ id: string; name: string; config: unknown }> {
  const list = (await admin('GET', `/services/${service}/plugins`)).body.data as Array<{ id: string; name: string; config: unknown }>;
  const found = list.find((p) => p.name === name);
  if (!found) throw new Error(`${name} is not on ${service}`);
  return found;
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

function containerIp(c: ContainerInspect): string {
  const ip = Object.values((c.NetworkSettings as { Networks?: Record<string, { IPAddress?: string }> }).Networks ?? {})[0]?.IPAddress;
  if (!ip) throw new Error('container has no address');
  return ip;
}

/** Runs verify through the CLI; what counts is the signed record file, proven signed and intact. */
async function verify(): Promise<{ exitCode: number | undefined; result: string; checks: Record<string, RecordedCheck>; failing: string[] }> {
  const r = await timed('verify', () => runCli(['verify', '--dir', dir, '--json'], { timeout: 300_000 }));
  const doc = JSON.parse(String(r.stdout));
  const recordPath = doc.result.recordPath as string;
  const signed = JSON.parse(readFileSync(recordPath, 'utf8')) as { result: string; checks: RecordedCheck[] };
  expect(verifyRecordFile(recordPath, {}).signer.subject).toContain('record signer');
  expect(signed.result).toBe(doc.result.record.result);
  expect(readFileSync(doc.result.markdownPath, 'utf8').split('\n')[0]).toContain(signed.result.toUpperCase());
  return {
    exitCode: r.exitCode,
    result: signed.result,
    checks: Object.fromEntries(signed.checks.map((c) => [c.id, c])),
    failing: signed.checks.filter((c) => c.mandatory && !['pass', 'skip'].includes(c.status)).map((c) => c.id).sort(),
  };
}

/** verify must reject, with exactly these mandatory checks failing. */
async function expectRejected(failing: string[]): Promise<Record<string, RecordedCheck>> {
  const v = await verify();
  expect(v.failing, JSON.stringify(Object.values(v.checks).filter((c) => c.status !== 'pass'), null, 1)).toEqual([...failing].sort());
  for (const id of failing) expect(v.checks[id]!.status, id).toBe('fail');
  expect(v.exitCode).toBe(1);
  expect(v.result).toBe('rejected');
  return v.checks;
}

/** Polls until `probe` holds (the event that matters), or fails after `ms`. */
async function until(what: string, probe: () => Promise<boolean>, ms = 180_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function metadataType(): Promise<string | null> {
  try {
    const res = await request(`http://127.0.0.1:${ports.fhir}/fhir/metadata`, { headersTimeout: 5000, bodyTimeout: 5000 });
    const body = (await res.body.json().catch(() => null)) as { resourceType?: string } | null;
    return res.statusCode === 200 ? (body?.resourceType ?? null) : null;
  } catch {
    return null;
  }
}

/** The host's own non-loopback IPv4 addresses, as admin-not-exposed probes them. */
function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a && !a.internal && a.family === 'IPv4')
    .map((a) => a!.address);
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

/** A gateway certificate put in the install's TLS folder and applied the product's way (runtime restart of the gateway). */
async function withGatewayCertificate(cert: KeyAndCert, run: () => Promise<void>): Promise<void> {
  const p = installPaths(dir);
  const saved = { cert: readFileSync(p.gatewayCert), key: readFileSync(p.gatewayKey) };
  writeFileSync(p.gatewayCert, cert.certPem);
  writeFileSync(p.gatewayKey, cert.keyPem, { mode: 0o600 });
  try {
    await timed('kong recreate', () => runtime.restart('gateway'));
    await run();
  } finally {
    writeFileSync(p.gatewayCert, saved.cert);
    writeFileSync(p.gatewayKey, saved.key, { mode: 0o600 });
    await timed('kong recreate', () => runtime.restart('gateway'));
  }
}

describe.skipIf(!engine)('a broken docker installation never gets an ACCEPTED record (issues 11, 12)', () => {
  beforeAll(async () => {
    await timed('images', () => buildImages());
    ports = { api: await freePort(), fhir: await freePort(), gatewayHttps: await freePort(), gatewayAdmin: await freePort() };
    const install = await timed('install', () =>
      runCli(
        [
          'install', '--runtime', 'docker', '--dir', dir, '--host', '127.0.0.1', '--generate-ca', '--platform-url', 'http://platform:8088',
          '--api-port', String(ports.api), '--fhir-port', String(ports.fhir), '--gateway-https-port', String(ports.gatewayHttps),
          '--gateway-admin-port', String(ports.gatewayAdmin),
          '--kong-image', TIER_IMAGES.kong, '--hapi-image', TIER_IMAGES.hapi, '--postgres-image', TIER_IMAGES.postgres, '--api-image', TIER_IMAGES.api,
        ],
        { timeout: 1_800_000 },
      ),
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

  it('the intact installation is ACCEPTED (the starting point of every case)', async () => {
    const v = await verify();
    expect(v.failing).toEqual([]);
    expect(v.checks['file-permissions']!.status).toBe('pass');
    expect([v.exitCode, v.result]).toEqual([0, 'accepted']);
  }, 300_000);

  it('key-auth removed from fhir-api-key-auth through the admin API: gateway-objects and both key-auth refusals fail', async () => {
    const plugin = await pluginOf('fhir-api-key-auth', 'key-auth');
    expect((await admin('DELETE', `/plugins/${plugin.id}`)).status).toBe(204);
    try {
      const checks = await expectRejected(['gateway-objects', 'key-auth-no-key', 'key-auth-wrong-key']);
      expect(checks['gateway-objects']!.summary).toContain('key-auth not attached to fhir-api-key-auth');
      expect(checks['key-auth-no-key']!.httpStatus).toBe(200);
      expect(checks['key-auth-wrong-key']!.httpStatus).toBe(200);
    } finally {
      expect((await admin('POST', '/services/fhir-api-key-auth/plugins', { name: 'key-auth', config: plugin.config })).status).toBe(201);
    }
  }, 300_000);

  it('basic-auth removed from fhir-api: gateway-objects and basic-auth-required fail', async () => {
    const plugin = await pluginOf('fhir-api', 'basic-auth');
    expect((await admin('DELETE', `/plugins/${plugin.id}`)).status).toBe(204);
    try {
      const checks = await expectRejected(['gateway-objects', 'basic-auth-required']);
      expect(checks['gateway-objects']!.summary).toContain('basic-auth not attached to fhir-api');
      expect(checks['basic-auth-required']!.httpStatus).toBe(200);
    } finally {
      expect((await admin('POST', '/services/fhir-api/plugins', { name: 'basic-auth', config: plugin.config })).status).toBe(201);
    }
  }, 300_000);

  it('cors detached from fhir-api: gateway-objects fails', async () => {
    const plugin = await pluginOf('fhir-api', 'cors');
    expect((await admin('DELETE', `/plugins/${plugin.id}`)).status).toBe(204);
    try {
      const checks = await expectRejected(['gateway-objects']);
      expect(checks['gateway-objects']!.summary).toBe('cors not attached to fhir-api');
    } finally {
      expect((await admin('POST', '/services/fhir-api/plugins', { name: 'cors', config: plugin.config })).status).toBe(201);
    }
  }, 300_000);

  it('a route renamed: gateway-objects fails', async () => {
    expect((await admin('PATCH', '/routes/fhir-api-key-auth-route', { name: 'renamed-route' })).status).toBe(200);
    try {
      const checks = await expectRejected(['gateway-objects']);
      expect(checks['gateway-objects']!.summary).toBe('route fhir-api-key-auth-route missing');
    } finally {
      expect((await admin('PATCH', '/routes/renamed-route', { name: 'fhir-api-key-auth-route' })).status).toBe(200);
    }
  }, 300_000);

  it("issue 12: credentials on Kong's plain HTTP port get 426 on both routes, never data; over HTTPS the same key opens the route", async () => {
    const key = readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY;
    expect(key).toBeTruthy();
    // the proxy's plain port (8000) is not published; from the host it is reached on the kong container's address
    const ip = containerIp(await container('kong'));
    const plain = await request(`http://${ip}:8000/fhir-api-key-auth/metadata`, { headers: { apikey: key! } });
    expect(plain.statusCode).toBe(426);
    expect(await plain.body.text()).not.toContain('CapabilityStatement');
    const basic = await request(`http://${ip}:8000/fhir-api/metadata`, { headers: { authorization: `Basic ${Buffer.from('hospital:whatever').toString('base64')}` } });
    expect(basic.statusCode).toBe(426);
    await basic.body.dump();
    // the probe is not refusing everything: the same request on the HTTPS port is let through
    const ca = readFileSync(installPaths(dir).caCert, 'utf8');
    const https = await request(`https://127.0.0.1:${ports.gatewayHttps}/fhir-api-key-auth/metadata`, { headers: { apikey: key! }, dispatcher: new Agent({ connect: { ca } }) });
    expect(https.statusCode).toBe(200);
    expect(((await https.body.json()) as { resourceType: string }).resourceType).toBe('CapabilityStatement');
  }, 120_000);

  it('issue 12: the files the containers read are 0600 in 0700 folders, owned by the uid that reads them', async () => {
    const d = installPaths(dir).docker;
    const kongUid = Number((await docker(['exec', (await container('kong')).Id, 'id', '-u'])).out.trim());
    const expected: Array<[string, number, number]> = [
      ['secrets', 0o700, kongUid],
      ['secrets/kong-pg-password', 0o600, kongUid],
      ['secrets/gateway.pem', 0o600, kongUid],
      ['secrets/gateway.key', 0o600, kongUid],
      // the hapi image's user (distroless nonroot, 65532)
      ['hapi-config', 0o700, 65532],
      ['hapi-config/spring.datasource.password', 0o600, 65532],
    ];
    for (const [path, mode, uid] of expected) {
      const st = statSync(join(d, path));
      expect([path, (st.mode & 0o777).toString(8), st.uid]).toEqual([path, mode.toString(8), process.getuid?.() === 0 ? uid : process.getuid?.()]);
    }
  }, 120_000);

  it("issue 12: Kong's database password copy left 0644: file-permissions fails naming it", async () => {
    const file = join(installPaths(dir).docker, 'secrets', 'kong-pg-password');
    chmodSync(file, 0o644);
    try {
      const checks = await expectRejected(['file-permissions']);
      expect(checks['file-permissions']!.summary).toContain('docker/secrets/kong-pg-password (0644)');
    } finally {
      chmodSync(file, 0o600);
    }
  }, 300_000);

  it('hapi stopped (docker stop): components-up, fhir-metadata and key-auth-metadata fail', async () => {
    const hapi = await container('hapi');
    await docker(['stop', hapi.Id]);
    try {
      const checks = await expectRejected(['components-up', 'fhir-metadata', 'key-auth-metadata']);
      expect(checks['components-up']!.summary).toBe('not up: hapi');
    } finally {
      await docker(['start', hapi.Id]);
      await until('hapi metadata after start', async () => (await metadataType()) === 'CapabilityStatement');
    }
  }, 600_000);

  it('another server answers as hapi (metadata an OperationOutcome): fhir-metadata, key-auth-metadata and components-up fail', async () => {
    const hapi = await container('hapi');
    await docker(['stop', hapi.Id]);
    // on the project network as `hapi`, published where HAPI was: the gateway and the host both reach it
    const server = [
      "require('node:http').createServer((req, res) => {",
      "  const body = req.url.endsWith('/metadata') ? { resourceType: 'OperationOutcome', issue: [] } : { resourceType: 'Bundle', type: 'searchset' };",
      "  res.writeHead(200, { 'content-type': 'application/fhir+json' }).end(JSON.stringify(body));",
      '}).listen(8080);',
    ].join('\n');
    try {
      await docker(['run', '-d', '--name', standInName, '--network', network, '--network-alias', 'hapi', '-p', `127.0.0.1:${ports.fhir}:8080`,
        '--entrypoint', '/usr/local/bin/node', TIER_IMAGES.hapi, '-e', server], { timeout: 300_000 });
      await until('the stand-in on the FHIR port', async () => (await metadataType()) === 'OperationOutcome');
      const checks = await expectRejected(['components-up', 'fhir-metadata', 'key-auth-metadata']);
      expect(checks['fhir-metadata']!.summary).toBe('200, not a CapabilityStatement');
      // through the gateway, the key-auth route reaches the same stand-in
      expect(checks['key-auth-metadata']!.httpStatus).toBe(200);
    } finally {
      await docker(['rm', '-f', standInName], { allowFail: true });
      await docker(['start', hapi.Id]);
      await until('hapi metadata after start', async () => (await metadataType()) === 'CapabilityStatement');
    }
  }, 900_000);

  it("the Hospital API's key no longer a credential (deleted through the admin API): key-auth-metadata fails with 401", async () => {
    const key = readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY!;
    const creds = (await admin('GET', '/consumers/broken-tier/key-auth')).body.data as Array<{ id: string }>;
    expect(creds).toHaveLength(1);
    expect((await admin('DELETE', `/consumers/broken-tier/key-auth/${creds[0]!.id}`)).status).toBe(204);
    try {
      const checks = await expectRejected(['key-auth-metadata']);
      expect(checks['key-auth-metadata']!.httpStatus).toBe(401);
    } finally {
      // the same key again: the API keeps using it
      expect((await admin('POST', '/consumers/broken-tier/key-auth', { key })).status).toBe(201);
    }
  }, 900_000);

  it('another program answers on the API port (not {}): api-health and components-up fail', async () => {
    const api = await container('hospital-api');
    await docker(['stop', api.Id]);
    const server = [
      "require('node:http').createServer((req, res) => {",
      "  res.writeHead(200, { 'content-type': 'application/json' }).end('{\"status\":\"UP\"}');",
      '}).listen(9000);',
    ].join('\n');
    const apiAnswer = async (): Promise<string | null> => {
      try {
        const res = await request(`http://127.0.0.1:${ports.api}/api/health-check`, { headersTimeout: 3000, bodyTimeout: 3000 });
        return res.statusCode === 200 ? await res.body.text() : (await res.body.dump(), null);
      } catch {
        return null;
      }
    };
    try {
      // published where the API was, as another program on that port would be
      await docker(['run', '-d', '--name', standInName, '--network', network, '-p', `127.0.0.1:${ports.api}:9000`,
        '--entrypoint', '/usr/local/bin/node', TIER_IMAGES.hapi, '-e', server], { timeout: 300_000 });
      await until('the stand-in on the API port', async () => (await apiAnswer()) === '{"status":"UP"}');
      const checks = await expectRejected(['components-up', 'api-health']);
      expect(checks['api-health']!.summary).toBe('200 {"status":"UP"}');
      expect(checks['components-up']!.summary).toBe('not up: hospital-api');
    } finally {
      await docker(['rm', '-f', standInName], { allowFail: true });
      await docker(['start', api.Id]);
      await until('the API answering {} again', async () => (await apiAnswer()) === '{}');
      await until('the API container healthy', async () => (await container('hospital-api')).State?.Health?.Status === 'healthy');
    }
  }, 900_000);

  it("kong recreated with its admin API published on every host address: admin-not-exposed fails", async () => {
    const addresses = hostAddresses();
    expect(addresses.length).toBeGreaterThan(0);
    // what the original deployment's compose file did: admin listening on all container addresses, published on the host
    const override = join(scratch, 'admin-exposed.yaml');
    writeFileSync(override, [
      'services:',
      '  kong:',
      '    environment:',
      '      KONG_ADMIN_LISTEN: "0.0.0.0:8001"',
      '    ports:',
      `      - "0.0.0.0:${ports.gatewayAdmin}:8001"`,
      '',
    ].join('\n'));
    await timed('kong recreate', () => compose(['up', '-d', '--no-deps', '--force-recreate', 'kong'], [override]));
    try {
      // the defect is real: the admin API answers on the host's own address
      await until('the admin API on the host address', async () => {
        try {
          const res = await request(`http://${addresses[0]}:${ports.gatewayAdmin}/services`, { headersTimeout: 3000 });
          await res.body.dump();
          return res.statusCode === 200;
        } catch {
          return false;
        }
      });
      // the admin API answers before the container's healthcheck has run; components-up would fail on "starting"
      await until('the recreated kong healthy', async () => (await container('kong')).State?.Health?.Status === 'healthy');
      const checks = await expectRejected(['admin-not-exposed']);
      expect(checks['admin-not-exposed']!.summary).toContain(`admin port ${ports.gatewayAdmin} answers on`);
      expect(checks['admin-not-exposed']!.summary).toContain(addresses[0]);
    } finally {
      // the product's restart recreates kong from the install's compose file alone
      await timed('kong recreate', () => runtime.restart('gateway'));
    }
    expect(await tcpOpens(addresses[0]!, ports.gatewayAdmin)).toBe(false);
  }, 900_000);

  it('a gateway certificate for another host from the right CA: certificate-chain and every HTTPS probe fail', async () => {
    const p = installPaths(dir);
    const ca = { certPem: readFileSync(p.caCert, 'utf8'), keyPem: readFileSync(p.caKey, 'utf8') };
    const wrongHost = issueCertificate(ca, { commonName: 'other.example', hosts: ['other.example', 'kong'], usage: 'server' });
    await withGatewayCertificate(wrongHost, async () => {
      const checks = await expectRejected(['certificate-chain', ...HTTPS_PROBES]);
      expect(checks['certificate-chain']!.detail).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID|does not match|not in the cert/i);
    });
  }, 900_000);

  it('a gateway certificate from another CA: certificate-chain and every HTTPS probe fail', async () => {
    const other = generateCa({ commonName: 'Unrelated CA' });
    await withGatewayCertificate(issueCertificate(other, { commonName: '127.0.0.1', hosts: ['127.0.0.1', 'localhost', 'kong'], usage: 'server' }), async () => {
      const checks = await expectRejected(['certificate-chain', ...HTTPS_PROBES]);
      expect(checks['certificate-chain']!.detail).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify/i);
      expect(checks['certificate-expiry']!.status).toBe('skip');
    });
  }, 900_000);

  it('an expired gateway certificate from the right CA: certificate-chain and every HTTPS probe fail', async () => {
    const p = installPaths(dir);
    const ca = { certPem: readFileSync(p.caCert, 'utf8'), keyPem: readFileSync(p.caKey, 'utf8') };
    const expired = issueCertificate(ca, { commonName: '127.0.0.1', hosts: ['127.0.0.1', 'localhost', 'kong'], usage: 'server', days: -1, backdateSeconds: 30 * 86_400 });
    await withGatewayCertificate(expired, async () => {
      const checks = await expectRejected(['certificate-chain', ...HTTPS_PROBES]);
      expect(checks['certificate-chain']!.detail).toMatch(/CERT_HAS_EXPIRED/);
    });
  }, 900_000);

  it('repaired, the same stack is ACCEPTED again (the cases failed for their defect, not for a broken stack)', async () => {
    const v = await verify();
    expect(v.failing).toEqual([]);
    expect([v.exitCode, v.result]).toEqual([0, 'accepted']);
  }, 300_000);
});

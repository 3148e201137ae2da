/**
 * The docker runtime against the `docker` stand-in (no engine runs here): the
 * command lines it runs, its parsing of `compose ps` and `inspect` output, the
 * admin API through `compose exec -T kong curl`, and a whole docker install
 * (render → up → wait → provision) with the admin calls answered by a test
 * admin API.
 */
import { createServer, type Server } from 'node:http';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDockerRuntime, parseCurlOutput } from '../../../src/runtime/docker/index.js';
import { componentsFromPs, parsePsOutput, splitReference } from '../../../src/runtime/docker/parse.js';
import { composeFile, projectName } from '../../../src/runtime/docker/render.js';
import { dockerEngineAnswers } from '../../../src/runtime/docker/compose.js';
import { runInstall } from '../../../src/install/run.js';
import { createConsumer } from '../../../src/install/consumer.js';
import { openRuntime } from '../../../src/runtime/index.js';
import { installPaths } from '../../../src/runtime/layout.js';
import { readInstallConfig, DEFAULT_PORTS, type InstallConfig } from '../../../src/runtime/install-config.js';
import { coversHost } from '../../../src/install/tls.js';
import { freePort } from '../../../src/util/port-check.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createFakeKong } from '../../install/fake-kong.js';
import { FIXTURES, useDockerShim } from './shim.js';

const shim = useDockerShim(tempDir());
const kong = createFakeKong();
let adminServer: Server;
/** When set, the admin stand-in SIGKILLs this process on the Nth write (a real install killed part-way). */
let killer: { pid: number; onWrite: number; writes: number } | null = null;
let fhirServer: Server;
let fhirPort = 0;

function listen(server: Server, port = 0): Promise<number> {
  return new Promise((r) => server.listen(port, '127.0.0.1', () => r((server.address() as { port: number }).port)));
}

beforeAll(async () => {
  adminServer = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    if (killer && req.method !== 'GET' && ++killer.writes === killer.onWrite) {
      process.kill(killer.pid, 'SIGKILL');
      return void res.destroy();
    }
    const out = await kong.admin(req.method as 'GET', req.url ?? '/', body ? JSON.parse(body) : undefined);
    res.writeHead(out.status, { 'content-type': 'application/json' }).end(JSON.stringify(out.body));
  });
  process.env.DOCKER_SHIM_ADMIN_URL = `http://127.0.0.1:${await listen(adminServer)}`;
  fhirServer = createServer((_req, res) => res.writeHead(200).end('{"resourceType":"CapabilityStatement"}'));
  fhirPort = await listen(fhirServer, await freePort());
});

afterAll(async () => {
  adminServer.close();
  fhirServer.close();
  removeTempDirs();
});

beforeEach(() => {
  shim.reset();
  delete process.env.DOCKER_SHIM_PS;
  delete process.env.DOCKER_SHIM_NO_CURL;
  delete process.env.DOCKER_SHIM_NO_ENGINE;
});

const config = (): InstallConfig => ({
  formatVersion: 1, runtime: 'docker', hosts: ['localhost'], ports: { ...DEFAULT_PORTS, fhir: fhirPort },
  platformApiUrl: null, caGenerated: true, cors: { origins: ['*'], headers: null, exposedHeaders: null },
  toolkitVersion: '0.1.0', installedAt: '2026-11-21T00:00:00.000Z', demo: false,
});

describe('docker compose ps / inspect parsing', () => {
  it('reads the NDJSON form: long-running services up, the migrations job excluded, published ports', () => {
    const list = componentsFromPs(parsePsOutput(readFileSync(join(FIXTURES, 'compose-ps.ndjson'), 'utf8')));
    expect(list.map((c) => [c.name, c.state])).toEqual([
      ['hapi', 'up'], ['hapi-database', 'up'], ['hospital-api', 'up'], ['kong', 'up'], ['kong-database', 'up'],
    ]);
    expect(list.find((c) => c.name === 'kong')!.ports).toEqual([8443]);
    expect(list.find((c) => c.name === 'kong-database')!.ports).toBeUndefined();
  });

  it('reads the array form: health starting, restarting and exited are not Up', () => {
    const list = componentsFromPs(parsePsOutput(readFileSync(join(FIXTURES, 'compose-ps-starting.json'), 'utf8')));
    expect(list.map((c) => [c.name, c.state])).toEqual([
      ['hapi', 'restarting'], ['hapi-database', 'down'], ['hospital-api', 'exited'], ['kong', 'starting'], ['kong-database', 'down'],
    ]);
    expect(list.find((c) => c.name === 'kong-database')!.detail).toMatch(/no container/);
    expect(list.find((c) => c.name === 'hospital-api')!.detail).toBe('Exited (3) 5 seconds ago');
  });

  it('splits image references; registry ports are not tags', () => {
    expect(splitReference('kong:3.9.1')).toEqual(['kong', '3.9.1']);
    expect(splitReference('registry.local:5000/hapi')).toEqual(['registry.local:5000/hapi', 'latest']);
    expect(splitReference('registry.local:5000/hapi:v7@sha256:ab')).toEqual(['registry.local:5000/hapi', 'v7']);
  });

  it('parses curl output: body then the status line', () => {
    expect(parseCurlOutput('{"data":[]}\n200')).toEqual({ status: 200, body: { data: [] } });
    expect(parseCurlOutput('\n204')).toEqual({ status: 204, body: null });
  });
});

describe('createDockerRuntime through the docker stand-in', () => {
  const dir = '/srv/hospital-install';
  const head = () => ['compose', '-p', projectName(dir), '-f', composeFile(dir)];

  it('components() runs `compose ps --all --format json`', async () => {
    const list = await createDockerRuntime(dir, config()).components();
    expect(list).toHaveLength(5);
    expect(shim.calls()).toEqual([[...head(), 'ps', '--all', '--format', 'json']]);
  });

  it('versions() reads image, tag and digest from docker inspect', async () => {
    const versions = await createDockerRuntime(dir, config()).versions();
    expect(versions.find((v) => v.name === 'kong')).toEqual({
      name: 'kong', version: '3.9.1', image: 'kong', tag: '3.9.1', digest: 'sha256:1111111111111111111111111111111111111111111111111111111111111111',
    });
    expect(versions.find((v) => v.name === 'hospital-api')!.digest).toBeNull();
    const calls = shim.calls();
    expect(calls[0]).toEqual([...head(), 'ps', '-q']);
    expect(calls[1]![0]).toBe('inspect');
    expect(calls[1]).toHaveLength(6);
    expect(calls[2]!.slice(0, 2)).toEqual(['image', 'inspect']);
    expect(calls[2]).toHaveLength(6); // four distinct images
  });

  it('restart(api) recreates the hospital-api service so a new env file is read', async () => {
    await createDockerRuntime(dir, config()).restart('api');
    expect(shim.calls()).toEqual([[...head(), 'up', '-d', '--no-deps', '--force-recreate', '--build', 'hospital-api']]);
  });

  it('admin() runs curl inside the kong container against 127.0.0.1:8001, the body on stdin', async () => {
    const rt = createDockerRuntime(dir, config());
    const res = await rt.admin('PUT', '/services/probe', { url: 'http://hapi:8080/fhir' });
    expect(res.status).toBe(200);
    expect(shim.calls()).toEqual([
      [...head(), 'exec', '-T', 'kong', 'curl', '-sS', '-X', 'PUT', '-w', '\n%{http_code}', '-H', 'Content-Type: application/json', '--data-binary', '@-', 'http://127.0.0.1:8001/services/probe'],
    ]);
    expect(kong.services.find((s) => s.name === 'probe')).toMatchObject({ host: 'hapi', port: 8080, path: '/fhir' });
  });

  it('admin() says clearly when curl is missing in the kong container', async () => {
    process.env.DOCKER_SHIM_NO_CURL = '1';
    await expect(createDockerRuntime(dir, config()).admin('GET', '/services')).rejects.toMatchObject({ code: 'ERR_INSTALL_DOCKER_CURL' });
  });

  it('up() waits until every long-running service is Up, then gives a clear time-out', async () => {
    process.env.DOCKER_SHIM_PS = 'compose-ps-starting.json';
    const rt = createDockerRuntime(dir, config(), { waitTimeoutMs: 300, pollMs: 50 });
    await expect(rt.up()).rejects.toMatchObject({ code: 'ERR_INSTALL_HEALTH_TIMEOUT', message: expect.stringContaining('kong') });
  });

  it('up() leaves the API container out until FHIR_API_KEY and PLATFORM_API_URL are set', async () => {
    const inst = tempDir();
    const { apiEnv } = installPaths(inst);
    await createDockerRuntime(inst, config()).up();
    const h = ['compose', '-p', projectName(inst), '-f', composeFile(inst)];
    expect(shim.calls()[0]).toEqual([...h, 'up', '-d', '--build', '--remove-orphans', 'kong-database', 'kong-migrations', 'kong', 'hapi-database', 'hapi']);
    writeFileSync(apiEnv, 'FHIR_API_KEY="k"\nPLATFORM_API_URL="https://p.example"\n');
    shim.reset();
    await createDockerRuntime(inst, config()).up();
    expect(shim.calls()[0]).toEqual([...h, 'up', '-d', '--build', '--remove-orphans']);
  });

  it('the runtime choice follows `docker info`', async () => {
    expect(await dockerEngineAnswers()).toBe(true);
    process.env.DOCKER_SHIM_NO_ENGINE = '1';
    expect(await dockerEngineAnswers()).toBe(false);
  });
});

describe('install --runtime docker (stand-in engine)', () => {
  it('an install process SIGKILLed part-way through provisioning is completed by a rerun, without duplicates', async () => {
    const fresh = createFakeKong();
    const saved = kong.admin;
    kong.admin = fresh.admin; // the admin stand-in now serves an empty gateway
    try {
      const dir = join(tempDir(), 'inst');
      const args = ['install', '--runtime', 'docker', '--dir', dir, '--generate-ca', '--fhir-port', String(fhirPort), '--json'];
      for (const onWrite of [2, 5]) {
        const child = startCli(args, { env: { ...process.env } });
        killer = { pid: child.pid as number, onWrite, writes: 0 };
        const killed = await child;
        expect(killed.signal).toBe('SIGKILL');
      }
      killer = null;
      const rerun = await runCli(args, { env: { ...process.env } });
      expect(rerun.exitCode, String(rerun.stderr)).toBe(0);
      expect(fresh.services.map((x) => x.name).sort()).toEqual(['fhir-api', 'fhir-api-key-auth']);
      expect(fresh.routes.map((x) => x.name).sort()).toEqual(['fhir-api-key-auth-route', 'fhir-api-route']);
      expect(fresh.plugins.map((x) => x.name).sort()).toEqual(['basic-auth', 'cors', 'key-auth']);
      expect(fresh.consumers).toEqual([]);
    } finally {
      killer = null;
      kong.admin = saved;
    }
  });

  it('renders the project, writes secrets 0600, starts compose, waits, provisions through the kong container', async () => {
    const dir = join(tempDir(), 'inst');
    const result = await runInstall(
      { dir, generateCa: true, host: ['fhir.hospital.example'], fhirPort: String(fhirPort) },
      { log: () => {} },
    );
    expect(result.runtime).toBe('docker'); // chosen because `docker info` answered
    const p = installPaths(dir);
    expect(readInstallConfig(dir).runtime).toBe('docker');
    for (const f of ['kong-pg-password', 'hapi-pg-password', 'kong-db.env', 'hapi-db.env', 'kong-tls.env']) {
      expect(statSync(join(p.secrets, f)).mode & 0o777, f).toBe(0o600);
    }
    const kongPw = readFileSync(join(p.secrets, 'kong-pg-password'), 'utf8').trim();
    expect(kongPw.length).toBeGreaterThanOrEqual(32);
    expect(readFileSync(composeFile(dir), 'utf8')).not.toContain(kongPw);
    const env = parseEnv(readFileSync(p.apiEnv, 'utf8'));
    expect(env.FHIR_BASE_URL).toBe('https://kong:8443/fhir-api-key-auth');
    expect(env.FHIR_CA_FILE).toBe('/run/hospital-api/tls/ca.pem');
    expect(coversHost(readFileSync(p.gatewayCert, 'utf8'), 'kong')).toBe(true);
    expect(coversHost(readFileSync(p.gatewayCert, 'utf8'), 'fhir.hospital.example')).toBe(true);
    const calls = shim.calls();
    const compose = calls.filter((c) => c[0] === 'compose').map((c) => c.slice(5));
    expect(compose[0]).toEqual(['up', '-d', '--build', '--remove-orphans', 'kong-database', 'kong-migrations', 'kong', 'hapi-database', 'hapi']);
    expect(compose[1]).toEqual(['ps', '--all', '--format', 'json']);
    const admin = compose.filter((c) => c[0] === 'exec').map((c) => `${c[c.indexOf('-X') + 1]} ${c[c.length - 1]!.replace('http://127.0.0.1:8001', '')}`);
    expect(admin).toContain('PUT /services/fhir-api');
    expect(admin).toContain('PUT /routes/fhir-api-key-auth-route');
    expect(kong.services.find((s) => s.name === 'fhir-api-key-auth')).toMatchObject({ host: 'hapi', port: 8080, path: '/fhir' });
    expect(result.provisioning).toHaveLength(7);

    // the hospital's own step: the consumer through the kong container, then the API recreated
    shim.reset();
    const made = await createConsumer(openRuntime(dir), dir, { username: 'hospital-a', writeEnv: true }, () => {});
    expect(kong.keys.map((k) => k.key)).toContain(made.key);
    const after = shim.calls().map((c) => c.slice(5));
    expect(after.filter((c) => c[0] === 'exec').map((c) => c[c.indexOf('-X') + 1])).toEqual(['GET', 'PUT', 'POST']); // does it exist, create, add the key
    expect(after[after.length - 1]).toEqual(['up', '-d', '--no-deps', '--force-recreate', '--build', 'hospital-api']);
    expect(shim.calls().flat().join(' ')).not.toContain(made.key); // the key goes on stdin, never argv
  });
});

/**
 * Issue 6 end to end, through the real CLI as a hospital runs it:
 * install → consumer create → up → verify → POST /api/patients (the Hospital
 * API reads FHIR through the real gateway over HTTPS) returns every resource
 * of a generated patient → a killed component comes back → data and gateway
 * state survive down + up → down leaves no process and no port. Ephemeral ports and a temp dir, never the defaults.
 * FHIR_PAGE_SIZE is small so every record crosses many $everything pages, and
 * paging links fetched through the gateway must name the gateway, not the FHIR server.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliAt, runCli } from '../helpers/cli.js';
import { postPatient, tokenOf } from '../helpers/patients.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { isPortFree } from '../../src/util/port-check.js';
import { testPorts } from '../helpers/native-install.js';
import type { InstallPorts } from '../../src/install-dir/install-config.js';
import { buildPlatformStandIn } from '../../src/demo/platform-stand-in.js';
import { writeTokens } from '../../src/demo/tokens.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import { SYNTHETIC_ID_SYSTEM, type GeneratedPatient } from '../../src/fhir-data/generate/model.js';
import { isAlive } from '../../src/runtime/native/state.js';
import { API_MALLOC_ENV, COMPONENT_NODE_ARGS } from '../../src/runtime/native/components.js';
import type { ComponentState } from '../../src/runtime/types.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';

const SEED = 'e2e-native-stack';
const SIZES = '10-300';
const PATIENTS = 3;
/** Far below the largest record (106 resources for this seed): several pages per request. */
const PAGE_SIZE = 20;

const dir = tempDir('hapi-e2e-');
const platformDir = tempDir('hapi-e2e-platform-');
const platform = buildPlatformStandIn(platformDir);
let ports: InstallPorts;
let platformUrl = '';

const cli = cliAt(dir);

/** `status --json`: exit 0 when every component runs, 3 (systemctl's code) while one does not (a killed one restarting). */
async function components(): Promise<ComponentState[]> {
  const r = await cli(['status', '--json']);
  const list = (JSON.parse(r.out) as { result: { components: ComponentState[] } }).result.components;
  expect(r.code, r.err).toBe(list.every((c) => c.state === 'up' || c.state === 'degraded') ? 0 : 3);
  return list;
}

function syntheticIds(entries: Array<{ resource: { identifier?: Array<{ system?: string; value?: string }> } }>): Set<string> {
  const ids = new Set<string>();
  for (const e of entries) for (const i of e.resource.identifier ?? []) if (i.system === SYNTHETIC_ID_SYSTEM && i.value) ids.add(i.value);
  return ids;
}

function expectedIds(p: GeneratedPatient): string[] {
  return [p.patient, ...p.groups.flatMap((g) => g.resources)].map((r) => r.id);
}

/** hospital_api_fhir_pages_total from the API's loopback metrics listener, with the token install made (issue 45). */
async function pagesFetched(): Promise<number> {
  const token = readFileSync(join(installPaths(dir).secrets, 'api-metrics-token'), 'utf8').trim();
  const res = await request(`http://127.0.0.1:${ports.metrics}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.statusCode).toBe(200);
  const m = /^hospital_api_fhir_pages_total(?:\{[^}]*\})? (\d+)/m.exec(await res.body.text());
  return m ? Number(m[1]) : 0;
}


beforeAll(async () => {
  await platform.listen({ host: '127.0.0.1', port: 0 });
  const addr = platform.server.address();
  platformUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  ports = await testPorts();
});

afterAll(async () => {
  await runCli(['down', '--dir', dir]);
  await platform.close();
  removeTempDirs();
});

describe('native stack end to end (issue 6)', () => {
  const dataset = generateDataset({ patients: PATIENTS, seed: SEED, sizes: SIZES });
  const tokens = writeTokens(platformDir, dataset.patients.map((p) => p.careId));

  it('installs, takes its consumer, comes up and verifies', async () => {
    const install = await cli([
      'install', '--runtime', 'native', '--generate-ca', '--platform-url', platformUrl, '--identifier-system', 'urn:hospital-api:platform-care-id',
      '--api-port', String(ports.api), '--fhir-port', String(ports.fhir),
      '--gateway-http-port', String(ports.gatewayHttp), '--gateway-https-port', String(ports.gatewayHttps),
      '--gateway-admin-port', String(ports.gatewayAdmin), '--metrics-port', String(ports.metrics),
    ]);
    expect(install.code, install.err).toBe(0);
    // Before `consumer create --write-env`, which (re)starts the API with this file.
    appendFileSync(installPaths(dir).apiEnv, `FHIR_PAGE_SIZE=${PAGE_SIZE}\n`);
    const consumer = await cli(['consumer', 'create', 'e2e-hospital', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    const up = await cli(['up']);
    expect(up.code, up.err).toBe(0);
    expect((await components()).map((c) => [c.name, c.state])).toEqual([['fhir', 'up'], ['gateway', 'up'], ['api', 'up']]);

    const data = join(dir, 'e2e-data');
    const gen = await runCli(['fhir', 'generate', '--patients', String(PATIENTS), '--seed', SEED, '--sizes', SIZES, '--out', data]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);
    const load = await runCli(['fhir', 'load', join(data, '00-shared.json'), join(data, '01-patients.ndjson'), '--url', `http://127.0.0.1:${ports.fhir}/fhir`]);
    expect(load.exitCode, String(load.stderr)).toBe(0);

    const verify = await cli(['verify']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
  });

  it('returns every resource of a generated patient through the gateway over HTTPS', async () => {
    const patient = [...dataset.patients].sort((a, b) => b.size - a.size)[0]!;
    expect(patient.size).toBeGreaterThan(3 * PAGE_SIZE);
    const token = tokenOf(tokens, patient.careId);
    const pagesBefore = await pagesFetched();
    const { status, body } = await postPatient(ports.api, patient.careId, token);
    expect(status).toBe(200);
    expect(await pagesFetched() - pagesBefore).toBeGreaterThanOrEqual(Math.ceil(patient.size / PAGE_SIZE));
    const got = syntheticIds(body.resources as never);
    const missing = expectedIds(patient).filter((id) => !got.has(id));
    expect(missing).toEqual([]);
    // Every resource exactly once across the page boundaries.
    const keys = body.resources!.map((e) => `${e.resource.resourceType}/${e.resource.id}`);
    expect(keys.length - new Set(keys).size, 'duplicated resources').toBe(0);
    expect(body.resources!.every((e) => typeof e.resource.resourceType === 'string')).toBe(true);

    // Another patient's token does not open this record.
    const other = tokens.find((t) => t.careId !== patient.careId)!.token;
    expect((await postPatient(ports.api, patient.careId, other)).status).not.toBe(200);
  });

  it('names the gateway HTTPS origin and route prefix in $everything next links fetched through key-auth', async () => {
    const env = readEnvFile(installPaths(dir).apiEnv);
    const base = env.FHIR_BASE_URL!; // https://<host>:<gateway https port>/fhir-api-key-auth
    expect(new URL(base).port).toBe(String(ports.gatewayHttps));
    const agent = new Agent({ connect: { ca: readFileSync(installPaths(dir).caCert, 'utf8'), rejectUnauthorized: true } });
    const get = async (url: string) => {
      const res = await request(url, { dispatcher: agent, headers: { apikey: env.FHIR_API_KEY!, accept: 'application/fhir+json' } });
      return { status: res.statusCode, body: (await res.body.json()) as { entry?: Array<{ resource: { id: string } }>; link?: Array<{ relation: string; url: string }> } };
    };
    try {
      // HSTS on the gateway's HTTPS answers, proxied and its own 401 alike (issue 48)
      for (const headers of [{ apikey: env.FHIR_API_KEY! }, {}]) {
        const res = await request(`${base}/metadata`, { dispatcher: agent, headers });
        await res.body.dump();
        expect([res.statusCode, res.headers['strict-transport-security']]).toEqual([Object.keys(headers).length ? 200 : 401, 'max-age=63072000']);
      }
      const search = await get(`${base}/Patient?_count=1`);
      expect(search.status).toBe(200);
      const id = search.body.entry![0]!.resource.id;
      const first = await get(`${base}/Patient/${id}/$everything?_count=5`);
      expect(first.status).toBe(200);
      const next = first.body.link!.find((l) => l.relation === 'next')!.url;
      expect(next.startsWith(`${base}/Patient/${id}/$everything?`), next).toBe(true);
      expect(new URL(next).origin).toBe(new URL(base).origin);
      expect((await get(next)).status).toBe(200);
    } finally {
      await agent.close();
    }
  });

  it('restarts a killed component and keeps serving', async () => {
    const gateway = (await components()).find((c) => c.name === 'gateway')!;
    process.kill(gateway.pid!, 'SIGKILL');
    const deadline = Date.now() + 30_000;
    let now = gateway;
    while (Date.now() < deadline) {
      now = (await components()).find((c) => c.name === 'gateway')!;
      if (now.state === 'up' && now.pid !== gateway.pid) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(now.state).toBe('up');
    expect(now.restarts).toBe(1);
    const patient = dataset.patients[0]!;
    const { status, body } = await postPatient(ports.api, patient.careId, tokens[0]!.token);
    expect(status).toBe(200);
    expect(body.resources!.length).toBeGreaterThanOrEqual(patient.size);
  });

  it('runs every component with the Node options of COMPONENT_NODE_ARGS (a fixed young generation), restarted ones too, and the API with its malloc arena cap', async () => {
    for (const c of await components()) {
      const argv = readFileSync(`/proc/${c.pid}/cmdline`, 'utf8').split('\0');
      const bin = argv.findIndex((a) => a.endsWith(join('bin', 'hospital-api.js')));
      expect(bin, c.name).toBeGreaterThan(0);
      expect(argv.slice(1, bin), c.name).toEqual([...COMPONENT_NODE_ARGS]);
      // the API's malloc arena cap reaches the process itself
      const environ = readFileSync(`/proc/${c.pid}/environ`, 'utf8').split('\0');
      const arenas = environ.find((e) => e.startsWith('MALLOC_ARENA_MAX='));
      if (c.name === 'api') expect(arenas).toBe(`MALLOC_ARENA_MAX=${API_MALLOC_ENV.MALLOC_ARENA_MAX}`);
      else expect(arenas, c.name).toBeUndefined();
    }
  });

  it('keeps data, gateway state and TLS material across a full down and up', async () => {
    const patient = dataset.patients[1]!;
    const token = tokenOf(tokens, patient.careId);
    const before = await postPatient(ports.api, patient.careId, token);
    expect((await cli(['down'])).code).toBe(0);
    const up = await cli(['up']);
    expect(up.code, up.err).toBe(0);
    const after = await postPatient(ports.api, patient.careId, token);
    expect(after.status).toBe(200);
    expect(after.body.resources!.length).toBe(before.body.resources!.length);
  });

  it('down leaves no process and no port behind', async () => {
    const pids = (await components()).map((c) => c.pid!);
    const down = await cli(['down']);
    expect(down.code, down.err).toBe(0);
    for (const pid of pids) expect(isAlive(pid), `pid ${pid}`).toBe(false);
    for (const [name, port] of Object.entries(ports)) expect(await isPortFree(port), `${name} port ${port}`).toBe(true);
  });
});

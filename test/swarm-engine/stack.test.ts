/**
 * Issue 29 end to end on a real three-node swarm (scripts/swarm-nodes.mjs),
 * through the real CLI: install --runtime swarm → consumer create --write-env →
 * verify ACCEPTED → POST /api/patients returns a multi-page record, from a
 * client in the bridge namespace, on every node that runs an API task → a
 * rolling install --api-image under a steady client through a load balancer →
 * logs, down and up → install again to scale from two to three gateway and API
 * replicas → consumer rotate-key --write-env under the same client → cert renew
 * --renew-ca under the same client (every node presents the new certificate) →
 * backup while serving, down, a restore refused into databases that hold data,
 * restore into a new directory, up, verify ACCEPTED, the same record → a lost
 * worker running one of each of Kong, HAPI and the API, with records flowing on
 * through another node → a second install whose Kong and HAPI databases are a
 * Postgres server outside the swarm (install, consumer, verify, a record, a backup).
 *
 * The CLI runs as a hospital runs it, on the manager: in n1's network namespace
 * (so its loopback is n1's, where the FHIR door is published) with n1's engine
 * as DOCKER_HOST, and the site's name `hospital.test` resolved, for the CLI alone
 * (a mount namespace of its own with its own /etc/hosts), to the node the test
 * puts in front, as the hospital's load balancer or DNS would. The clients run in
 * the bridge namespace. Only addresses inside the namespaces the harness makes
 * are contacted.
 *
 * The images are the docker tier's (scripts/docker-engine.mjs), loaded onto each
 * node. Its stand-ins are replica-safe (test/docker-engine/README.md): each kong
 * proxy follows the database every KONG_DB_UPDATE_FREQUENCY s as Kong does, the
 * hapi replicas share one Postgres, and the hapi image answers the stack's
 * `java -cp /app HealthCheck`. So two replicas of Kong, HAPI and the API, and
 * nothing between a change through kong-admin and the proxies serving it but the
 * propagation verify allows for (Runtime.gatewayPropagationMs).
 *
 * Without root, the binaries or the docker tier's images, every test is skipped
 * with one `skipped: <why>` line. afterAll stops everything the harness started
 * (daemons, namespaces, mounts, cgroups), also when a case failed.
 */
import { appendFileSync, chownSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes, X509Certificate } from 'node:crypto';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliAt, runCli, type CliOutcome } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { writeTokens } from '../../src/demo/tokens.js';
import { generateCa, issueCertificate } from '../../src/tls/pki.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { projectName } from '../../src/runtime/container/project.js';
import { TIER_IMAGES } from '../docker-engine/engine.js';
import { formatTimings, lanCurl, syntheticIds, type RecordEntry, type Timings } from '../docker-engine/site.js';
import { lockSwarm, MANAGER, nodeSocket, onNode, onTierEngine, unlockSwarm, secondsSince, swarmLeftovers, swarmScript, swarmSkipReason, type NodeName } from './nodes.js';
import { tokenOf } from '../helpers/patients.js';


const reason = await swarmSkipReason([TIER_IMAGES.postgres, TIER_IMAGES.api, TIER_IMAGES.kong, TIER_IMAGES.hapi]);
if (reason) process.stdout.write(`skipped: ${reason}\n`);

const SITE = 'hospital.test';
const NODE_ADDRESS: Readonly<Record<NodeName, string>> = { n1: '198.51.100.11', n2: '198.51.100.12', n3: '198.51.100.13' };
const PORTS = { api: 9000, gatewayHttps: 8443, fhir: 8080 };
const PLATFORM_PORT = 8088;
const SEED = 'swarm-engine-tier';
const SIZES = '60-150';
const PATIENTS = 2;
const PAGE_SIZE = 20;

/** The install the CLI runs on, and its stack: from the restore case on, the restored one. */
let dir = tempDir('hapi-swarm-tier-');
const platformDir = tempDir('hapi-swarm-platform-');
let stack = projectName(dir);
/** The synthetic patients as FHIR files (`fhir generate`), loaded into each install's FHIR server. */
const dataDir = join(tempDir('hapi-swarm-data-'), 'tier-data');
/** The platform stand-in, a service outside the stack on the stack's network. */
const platformService = `${stack}-platform`;
const hostsFile = join(tempDir('hapi-swarm-hosts-'), 'hosts');
const timings: Timings = {};
const dataset = generateDataset({ patients: PATIENTS, seed: SEED, sizes: SIZES });
let tokens: Array<{ careId: string; token: string }> = [];

function say(text: string): void {
  process.stdout.write(`swarm stack tier: ${text}\n`);
}

/** The site's name points at this node for the CLI (the load balancer in front of the swarm). */
function siteAt(node: NodeName): void {
  writeFileSync(hostsFile, `127.0.0.1 localhost\n${NODE_ADDRESS[node]} ${SITE}\n`);
}

/** The real CLI on the manager: n1's network namespace, n1's engine, the site's name from hostsFile (test/helpers/cli.ts). */
const onManager = cliAt(() => dir, {
  through: ['nsenter', `--net=/run/netns/hapi-sw-${MANAGER}`, '--', 'unshare', '--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', hostsFile],
  timeout: 900_000,
  stdin: 'ignore',
  // DOCKER_API_VERSION: the nodes' dockerd is 20.10 (API 1.41), the CLI here newer (nodes.ts onNode)
  env: { DOCKER_HOST: `unix://${nodeSocket(MANAGER)}`, DOCKER_API_VERSION: '1.41' },
});

/** onManager, each command's time added to the tier's timings. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<CliOutcome> {
  const t0 = Date.now();
  const r = await onManager(args, { env });
  const name = args.slice(0, args[0] === 'consumer' ? 2 : 1).join(' ');
  timings[name] = (timings[name] ?? 0) + (Date.now() - t0);
  return r;
}

/** The platform stand-in off the stack's network (before the stack is removed) and on it again. */
async function platformOff(): Promise<void> {
  await onNode(MANAGER, ['service', 'update', '--detach=false', '--quiet', '--network-rm', `${stack}_backend`, platformService], { timeout: 600_000 });
}

async function platformOn(): Promise<void> {
  await onNode(MANAGER, ['service', 'update', '--detach=false', '--quiet', '--network-add', `name=${stack}_backend,alias=platform`, platformService], { timeout: 600_000 });
}

/**
 * The SHA-256 fingerprint of the certificate a node's gateway presents to a client in the bridge
 * namespace for the site's name, verified against `caFile` (openssl fails the handshake otherwise).
 */
async function presentedOn(node: NodeName, caFile: string): Promise<string> {
  const r = await execa(
    'sh',
    ['-c', 'nsenter --net=/run/netns/hapi-sw-br openssl s_client -connect "$1" -servername "$2" -verify_hostname "$2" -CAfile "$3" -verify_return_error </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256', 'sh', `${NODE_ADDRESS[node]}:${PORTS.gatewayHttps}`, SITE, caFile],
    { reject: false, stdin: 'ignore', timeout: 30_000 },
  );
  return /Fingerprint=([0-9A-F:]+)/.exec(String(r.stdout))?.[1] ?? `no verified certificate (exit ${r.exitCode})`;
}

/** POST /api/patients from a client in the bridge namespace (a machine on the hospital's network in front of the nodes). */
function postFromBridge(node: NodeName, body: string, port = PORTS.api) {
  return lanCurl(`http://${NODE_ADDRESS[node]}:${port}/api/patients`, { port, netns: 'hapi-sw-br', args: ['-H', 'content-type: application/json'], data: body });
}

/** `verify --json` on the current install: exit 0 and the record ACCEPTED. */
async function expectAccepted(): Promise<void> {
  const verify = await cli(['verify', '--json']);
  expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
  expect(JSON.parse(verify.out).result.record.result).toBe('accepted');
}

/** POST /api/patients for the largest patient to the API on `node`, asked again while it comes up: every resource of the record is there. */
async function expectWholeRecord(node: NodeName, what: string, port = PORTS.api): Promise<void> {
  const patient = [...dataset.patients].sort((a, b) => b.size - a.size)[0]!;
  const token = tokenOf(tokens, patient.careId);
  const expected = [patient.patient, ...patient.groups.flatMap((g) => g.resources)].map((r) => r.id);
  const res = await until(() => postFromBridge(node, JSON.stringify({ platformCareId: patient.careId, token }), port), {
    what: `a record from ${what} on ${node}`,
    timeoutMs: 90_000,
    intervalMs: 1000,
    ok: (r) => r.code === 0 && r.status === 200,
  });
  const got = syntheticIds((JSON.parse(res.body) as { resources: RecordEntry[] }).resources);
  expect(expected.filter((id) => !got.has(id)), node).toEqual([]);
}

/** The nodes running a task of one of the stack's services now (host names), from the manager. */
async function nodesOf(service: string): Promise<NodeName[]> {
  const { out } = await onNode(MANAGER, ['service', 'ps', `${stack}_${service}`, '--filter', 'desired-state=running', '--format', '{{.Node}} {{.CurrentState}}']);
  return out.split('\n').filter((l) => / Running /.test(` ${l} `)).map((l) => l.split(' ')[0] as NodeName).sort();
}

async function serviceInspect(service: string): Promise<{ Spec: { TaskTemplate: { ContainerSpec: { Env?: string[] } }; Mode: { Replicated: { Replicas: number } }; EndpointSpec?: { Ports?: unknown[] } } }> {
  return (JSON.parse((await onNode(MANAGER, ['service', 'inspect', `${stack}_${service}`])).out) as Array<Awaited<ReturnType<typeof serviceInspect>>>)[0]!;
}

/** `docker service ps` of one of the stack's services (every task, errors untruncated) and `docker node ls`, as the manager prints them. */
async function swarmState(service: string): Promise<string> {
  const ps = await onNode(MANAGER, ['service', 'ps', '--no-trunc', '--format', '{{.Name}} {{.Node}} {{.Image}} desired={{.DesiredState}} {{.CurrentState}} {{.Error}}', `${stack}_${service}`]);
  const nodes = await onNode(MANAGER, ['node', 'ls', '--format', '{{.Hostname}} {{.Status}} {{.Availability}}']);
  return `${ps.out}\n${nodes.out}`;
}

/** curl's exit codes for a request no server answered at all: 7 no connection, 52 closed with no reply, 56 reset. */
const NO_SERVER = new Set([7, 52, 56]);

/**
 * One request through the hospital's load balancer in front of the API nodes, as HAProxy does it
 * (HAProxy configuration manual: `balance roundrobin`, `retries 3`, `option redispatch`,
 * `retry-on conn-failure empty-response`): each request to the next node; one that found no
 * server there (no task publishes the port on that node now, or the engine's port proxy closed it
 * with no reply) goes to the next node. Any HTTP answer is final: a non-200 is a failed request.
 */
function balancer(nodes: NodeName[]) {
  let next = 0;
  return async (body: string): Promise<{ ok: boolean; redispatched: number; last: string }> => {
    let redispatched = 0;
    for (let attempt = 0; attempt <= 3; attempt++) {
      const node = nodes[next++ % nodes.length]!;
      const r = await postFromBridge(node, body);
      if (r.code === 0) return { ok: r.status === 200, redispatched, last: `${node}: ${r.status}` };
      if (!NO_SERVER.has(r.code)) return { ok: false, redispatched, last: `${node}: curl ${r.code}` };
      redispatched++;
    }
    return { ok: false, redispatched, last: 'no node answered' };
  };
}

/**
 * What a steady client saw through the balancer: the requests that failed, and one line of figures
 * (sent, failed with the first few answers, sent on to another node after finding no server).
 */
function throughBalancer<T extends { ok: boolean; redispatched: number; last: string }>(results: T[]): { failed: T[]; line: string } {
  const failed = results.filter((x) => !x.ok);
  const answers = failed.length ? ` (${failed.slice(0, 3).map((f) => f.last).join(', ')})` : '';
  const redispatched = results.reduce((n, x) => n + x.redispatched, 0);
  return { failed, line: `${results.length} requests through the balancer, ${failed.length} failed${answers}, ${redispatched} redispatched to another node (no server on the first)` };
}

/**
 * A steady client: `request` again and again, 250 ms apart, until `stop()`, which resolves to
 * every result once the request in flight has ended.
 */
function steadyClient<T>(request: () => Promise<T>): { stop: () => Promise<T[]> } {
  const results: T[] = [];
  let steady = true;
  const loop = (async () => {
    while (steady) {
      results.push(await request());
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  return {
    stop: async () => {
      steady = false;
      await loop;
      return results;
    },
  };
}

describe.skipIf(reason !== null)('the swarm runtime on a real three-node swarm (issue 29)', () => {
  beforeAll(async () => {
    // one file at a time: the swarm's names are fixed
    await lockSwarm();
    let t0 = Date.now();
    await swarmScript(['start']);
    timings['swarm start'] = Date.now() - t0;
    t0 = Date.now();
    const figures = await swarmScript(['load', TIER_IMAGES.postgres, TIER_IMAGES.api, TIER_IMAGES.kong, TIER_IMAGES.hapi]);
    timings['image load'] = Date.now() - t0;
    say(`images on every node: ${secondsSince(t0)} s (${figures.trim().split('\n').join('; ')})`);
    tokens = writeTokens(platformDir, dataset.patients.map((p) => p.careId));
    siteAt(MANAGER);
  }, 1_800_000);

  // also when a case failed: every daemon, namespace, mount and cgroup of the harness goes
  afterAll(async () => {
    if (reason !== null) return;
    const t0 = Date.now();
    await swarmScript(['stop'], 180_000);
    timings['swarm stop'] = Date.now() - t0;
    say(`timings (s): ${formatTimings(timings)}; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
    unlockSwarm();
    expect(await swarmLeftovers()).toEqual([]);
    removeTempDirs();
  }, 300_000);

  it('install deploys the stack over the nodes, runs the migrations once, and provisions the gateway through kong-admin', async () => {
    const r = await cli([
      'install', '--runtime', 'swarm', '--host', SITE, '--generate-ca', '--json',
      '--platform-url', `http://platform:${PLATFORM_PORT}`, '--identifier-system', 'urn:hospital-api:platform-care-id',
      '--kong-image', TIER_IMAGES.kong, '--hapi-image', TIER_IMAGES.hapi, '--postgres-image', TIER_IMAGES.postgres, '--api-image', TIER_IMAGES.api,
      '--gateway-replicas', '2', '--api-replicas', '2', '--fhir-replicas', '2',
      // This kernel has no ESP (IPsec), which an encrypted overlay needs: unencrypted here only.
      // Overlay traffic carries patient data between hosts; production keeps the default (on).
      '--overlay-encryption', 'off',
    ]);
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    const result = JSON.parse(r.out).result as { runtime: string; provisioning: Array<{ change: string }> };
    expect(result.runtime).toBe('swarm');
    expect(result.provisioning.map((s) => s.change)).toEqual(Array(10).fill('created'));
    // Kong's proxies on two nodes, one each; kong-admin on the manager (the node install runs on), never published
    expect(await nodesOf('kong')).toHaveLength(2);
    expect(new Set(await nodesOf('kong')).size).toBe(2);
    expect(await nodesOf('kong-admin')).toEqual([MANAGER]);
    // HAPI's two replicas spread over two nodes (placement preference spread: node.id)
    expect(new Set(await nodesOf('hapi')).size).toBe(2);
    expect((await serviceInspect('kong-admin')).Spec.EndpointSpec?.Ports ?? []).toEqual([]);
    // the migrations ran (Kong starts only on a bootstrapped database) and are back at no task
    expect((await serviceInspect('kong-migrations')).Spec.Mode.Replicated.Replicas).toBe(0);
    // no password in any service's environment; each is a Swarm secret whose name carries its digest
    const password = readFileSync(join(installPaths(dir).secrets, 'kong-pg-password'), 'utf8').trim();
    for (const service of ['kong', 'kong-admin', 'kong-database', 'hapi', 'ops']) {
      expect(JSON.stringify((await serviceInspect(service)).Spec.TaskTemplate.ContainerSpec.Env ?? []), service).not.toContain(password);
    }
    const secrets = (await onNode(MANAGER, ['secret', 'ls', '--format', '{{.Name}}'])).out.split('\n').filter(Boolean);
    expect(secrets.filter((s) => s.startsWith(`${stack}_kong-pg-password-`))).toHaveLength(1);
    // the API is held back until the hospital has created its key
    expect((await serviceInspect('hospital-api')).Spec.Mode.Replicated.Replicas).toBe(0);
    say(`install: ${(timings.install! / 1000).toFixed(1)} s`);
  }, 1_800_000);

  it('consumer create --write-env starts the API on two nodes; verify is ACCEPTED, probing the gateway on each node', async () => {
    // the platform stand-in as a service on the stack's network, reached as http://platform:8088, published nowhere
    chownSync(platformDir, 1000, 1000);
    for (const f of readdirSync(join(platformDir, 'demo'))) chownSync(join(platformDir, 'demo', f), 1000, 1000);
    chownSync(join(platformDir, 'demo'), 1000, 1000);
    await onNode(MANAGER, [
      'service', 'create', '--detach', '--quiet', '--name', platformService, '--network', `name=${stack}_backend,alias=platform`, '--endpoint-mode', 'dnsrr',
      '--constraint', `node.hostname==${MANAGER}`, '--user', '1000:1000', '--mount', `type=bind,source=${platformDir},target=/platform,readonly`, '--no-resolve-image',
      TIER_IMAGES.api, 'demo', '--platform-stand-in', '--listen', `0.0.0.0:${PLATFORM_PORT}`, '--dir', '/platform',
    ]);
    appendFileSync(installPaths(dir).apiEnv, `FHIR_PAGE_SIZE=${PAGE_SIZE}\n`);
    const consumer = await cli(['consumer', 'create', 'tier-hospital', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    const apiNodes = await nodesOf('hospital-api');
    expect(apiNodes).toHaveLength(2);
    // the settings with the key are a new secret; the one install made (no task ever ran on it) is gone
    const secrets = (await onNode(MANAGER, ['secret', 'ls', '--format', '{{.Name}}'])).out.split('\n').filter((n) => n.startsWith(`${stack}_hospital-api.env-`));
    expect(secrets).toHaveLength(1);

    const data = dataDir;
    const gen = await runCli(['fhir', 'generate', '--patients', String(PATIENTS), '--seed', SEED, '--sizes', SIZES, '--out', data]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);
    // the installation's own FHIR address: the FHIR door on the manager's loopback, with its token
    const load = await cli(['fhir', 'load', join(data, '00-shared.json'), join(data, '01-patients.ndjson')]);
    expect(load.code, load.err).toBe(0);

    // the site's name at a node that runs both a gateway and an API task (two of three nodes each: one does)
    const front = (await nodesOf('kong')).find((n) => apiNodes.includes(n));
    expect(front).toBeDefined();
    siteAt(front!);
    const status = await cli(['status', '--json']);
    expect(status.code, `${status.out}\n${status.err}`).toBe(0);
    const comps = JSON.parse(status.out).result.components as Array<{ name: string; state: string; detail: string }>;
    expect(comps.map((c) => [c.name, c.state])).toEqual(
      ['fhir-door', 'hapi', 'hapi-database', 'hospital-api', 'kong', 'kong-admin', 'kong-database', 'ops'].map((n) => [n, 'up']),
    );
    expect(comps.find((c) => c.name === 'kong')!.detail).toMatch(/^2\/2 tasks running on n\d, n\d$/);
    const verify = await cli(['verify', '--json']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
    const record = JSON.parse(verify.out).result.record as { result: string; checks: Array<{ id: string; status: string; summary: string }> };
    expect(record.result).toBe('accepted');
    const perNode = record.checks.find((c) => c.id === 'gateway-nodes')!;
    expect(perNode.status).toBe('pass');
    expect(perNode.summary).toMatch(/on 2 hosts/);
  }, 1_800_000);

  it('POST /api/patients from the bridge namespace reads a multi-page record through each node that runs the API', async () => {
    const patient = [...dataset.patients].sort((a, b) => b.size - a.size)[0]!;
    expect(patient.size).toBeGreaterThan(2 * PAGE_SIZE);
    const token = tokenOf(tokens, patient.careId);
    const expected = [patient.patient, ...patient.groups.flatMap((g) => g.resources)].map((r) => r.id);
    const apiNodes = await nodesOf('hospital-api');
    expect(apiNodes).toHaveLength(2);
    for (const node of apiNodes) {
      const t0 = Date.now();
      const res = await until(() => postFromBridge(node, JSON.stringify({ platformCareId: patient.careId, token })), {
        what: `a record from the API on ${node}`,
        timeoutMs: 60_000,
        intervalMs: 1000,
        ok: (r) => r.code === 0 && r.status === 200,
      });
      const got = syntheticIds((JSON.parse(res.body) as { resources: RecordEntry[] }).resources);
      expect(expected.filter((id) => !got.has(id)), node).toEqual([]);
      say(`record of ${expected.length} resources from the API on ${node}: ${secondsSince(t0)} s`);
    }
  }, 300_000);

  it('install --api-image rolls the API to a new image task by task, and a steady client through a load balancer sees no failed request', async () => {
    // the "new" image: the tier's API image under a new tag, onto every node (a new tag is a new service spec)
    const next = `${TIER_IMAGES.api}-next`;
    await onTierEngine(['tag', TIER_IMAGES.api, next]);
    await swarmScript(['load', next]);
    const patient = dataset.patients[0]!;
    const body = JSON.stringify({ platformCareId: patient.careId, token: tokenOf(tokens, patient.careId) });
    const send = balancer(['n1', 'n2', 'n3']);
    expect((await send(body)).ok).toBe(true);
    const before = ((await serviceInspect('hospital-api')) as unknown as { Spec: { TaskTemplate: { ContainerSpec: { Image: string } } } }).Spec.TaskTemplate.ContainerSpec.Image;
    expect(before).not.toBe(next);
    const client = steadyClient(() => send(body));
    try {
      const t0 = Date.now();
      const r = await cli(['install', '--api-image', next, '--json']);
      const rolled = secondsSince(t0);
      // a roll that did not finish: what Swarm says of the API's tasks and the nodes, for the post-mortem
      if (r.code !== 0) say(`roll failed; the API's tasks:\n${(await swarmState('hospital-api')).trim()}`);
      expect(r.code, `${r.out}\n${r.err}`).toBe(0);
      // install returned once Swarm's update of the API finished: every running API task has the new image
      type Spec = { TaskTemplate: { ContainerSpec: { Image: string } } };
      const spec = (await serviceInspect('hospital-api')) as unknown as { Spec: Spec; PreviousSpec?: Spec };
      expect(spec.Spec.TaskTemplate.ContainerSpec.Image).toBe(next);
      // the start updated the API once: its previous spec is the image it ran before, which is what a failed
      // roll's rollback returns to; a second update mid-roll (a later phase of the start deploying the API
      // again) can leave a new task pending for ever (stack-changes.ts, moby/moby#53722)
      expect(spec.PreviousSpec?.TaskTemplate.ContainerSpec.Image).toBe(before);
      const images = (await onNode(MANAGER, ['service', 'ps', `${stack}_hospital-api`, '--filter', 'desired-state=running', '--format', '{{.Image}} {{.CurrentState}}'])).out.split('\n').filter((l) => / Running /.test(` ${l} `));
      expect(images.map((l) => l.split(' ')[0])).toEqual([next, next]);
      const results = await client.stop();
      const { failed, line } = throughBalancer(results);
      say(`API rolled to ${next}: install ${rolled} s; ${line}; order ${(await onNode(MANAGER, ['service', 'inspect', '--format', '{{.Spec.UpdateConfig.Order}}', `${stack}_hospital-api`])).out.trim()}`);
      expect(failed, JSON.stringify(failed.slice(0, 5))).toEqual([]);
      expect(results.length).toBeGreaterThan(10);
    } finally {
      await client.stop();
    }
  }, 900_000);

  it('logs shows each replica by node; down and up bring the stack back with its data', async () => {
    const logs = await cli(['logs', 'kong', '-n', '5']);
    expect(logs.code, logs.err).toBe(0);
    // one line at least from each node that runs a proxy, prefixed with its replica and node
    for (const node of await nodesOf('kong')) expect(logs.out, node).toMatch(new RegExp(`kong\\.\\d+@${node} \\|`));
    // the platform stand-in is not the stack's: off its network while the stack removes it
    await platformOff();
    const down = await cli(['down']);
    expect(down.code, down.err).toBe(0);
    expect((await onNode(MANAGER, ['service', 'ls', '-q', '--filter', `label=com.docker.stack.namespace=${stack}`])).out.trim()).toBe('');
    const up = await cli(['up']);
    expect(up.code, `${up.out}\n${up.err}`).toBe(0);
    // and on the new one again
    await platformOn();
    const patient = dataset.patients[0]!;
    const token = tokenOf(tokens, patient.careId);
    const node = (await nodesOf('hospital-api'))[0]!;
    const res = await until(() => postFromBridge(node, JSON.stringify({ platformCareId: patient.careId, token })), {
      what: `a record from the API on ${node} after down and up`,
      timeoutMs: 90_000,
      intervalMs: 1000,
      ok: (r) => r.code === 0 && r.status === 200,
    });
    expect(syntheticIds((JSON.parse(res.body) as { resources: RecordEntry[] }).resources).has(patient.patient.id)).toBe(true);
  }, 900_000);

  it('install again with three gateway and API replicas scales them to every node, and verify probes the gateway on three', async () => {
    const r = await cli(['install', '--gateway-replicas', '3', '--api-replicas', '3', '--json']);
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    // the same gateway objects: nothing to provision again
    expect((JSON.parse(r.out).result.provisioning as Array<{ change: string }>).every((s) => s.change === 'unchanged')).toBe(true);
    expect(await nodesOf('kong')).toEqual(['n1', 'n2', 'n3']);
    expect(await nodesOf('hospital-api')).toEqual(['n1', 'n2', 'n3']);
    const verify = await cli(['verify', '--json']);
    expect(verify.code, `${verify.out}\n${verify.err}`).toBe(0);
    const perNode = (JSON.parse(verify.out).result.record as { checks: Array<{ id: string; summary: string }> }).checks.find((c) => c.id === 'gateway-nodes')!;
    expect(perNode.summary).toBe('200 CapabilityStatement on 3 hosts: n1, n2, n3');
  }, 900_000);

  it('consumer rotate-key --write-env rolls every API task onto the new key, the old key is revoked, and records keep flowing through the balancer', async () => {
    const patient = dataset.patients[0]!;
    const body = JSON.stringify({ platformCareId: patient.careId, token: tokenOf(tokens, patient.careId) });
    const send = balancer(['n1', 'n2', 'n3']);
    const apiKey = () => readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY;
    const oldKey = apiKey();
    const client = steadyClient(() => send(body));
    try {
      const t0 = Date.now();
      const r = await cli(['consumer', 'rotate-key', 'tier-hospital', '--write-env', '--json']);
      const took = secondsSince(t0);
      expect(r.code, `${r.out}\n${r.err}`).toBe(0);
      const result = JSON.parse(r.out).result as { key: string; revokedCredentialId: string | null; apiKeyFingerprint: string | null };
      // compared, never printed: a key in a test's failure message would be a key in CI's log
      expect(result.key === oldKey, 'a new key').toBe(false);
      expect(result.revokedCredentialId).not.toBeNull();
      expect(apiKey() === result.key, 'the new key in hospital-api.env').toBe(true);
      // one settings secret left, and every running API task mounts it (the old one went with its tasks)
      const secrets = (await onNode(MANAGER, ['secret', 'ls', '--format', '{{.Name}}'])).out.split('\n').filter((n) => n.startsWith(`${stack}_hospital-api.env-`));
      expect(secrets).toHaveLength(1);
      const mounted = (await onNode(MANAGER, ['service', 'inspect', '--format', '{{range .Spec.TaskTemplate.ContainerSpec.Secrets}}{{.SecretName}} {{end}}', `${stack}_hospital-api`])).out;
      expect(mounted).toContain(secrets[0]!);
      expect(await nodesOf('hospital-api')).toEqual(['n1', 'n2', 'n3']);
      const results = await client.stop();
      const { failed, line } = throughBalancer(results);
      say(`key rotated: ${took} s; ${line}`);
      expect(failed, JSON.stringify(failed.slice(0, 5))).toEqual([]);
      expect(results.length).toBeGreaterThan(10);
    } finally {
      await client.stop();
    }
  }, 900_000);

  it('cert renew --renew-ca rolls the API onto the new CA and every gateway task onto a certificate from it; each node presents it; records keep flowing', async () => {
    const paths = installPaths(dir);
    const caFile = paths.caCert;
    const oldCa = new X509Certificate(readFileSync(caFile, 'utf8'));
    const before = await presentedOn('n1', caFile);
    expect(before).toBe(new X509Certificate(readFileSync(paths.gatewayCert)).fingerprint256);
    const patient = dataset.patients[0]!;
    const body = JSON.stringify({ platformCareId: patient.careId, token: tokenOf(tokens, patient.careId) });
    const send = balancer(['n1', 'n2', 'n3']);
    const client = steadyClient(async () => ({ at: Date.now(), ...(await send(body)) }));
    let done = 0;
    try {
      const t0 = Date.now();
      const renew = await cli(['cert', 'renew', '--renew-ca', '--json']);
      done = Date.now();
      expect(renew.code, `${renew.out}\n${renew.err}`).toBe(0);
      const result = JSON.parse(renew.out).result as { gatewayReloaded: boolean; ca: { fingerprint256: string } };
      expect(result.gatewayReloaded).toBe(true);
      // the renewal checked every node publishing the gateway, and says what became of open connections
      expect(renew.err).toMatch(/new certificate to new connections on 3 hosts \(n1, n2, n3\).*replaced/);
      const bundle = readFileSync(caFile, 'utf8');
      expect(new X509Certificate(bundle).fingerprint256).toBe(result.ca.fingerprint256);
      const want = new X509Certificate(readFileSync(paths.gatewayCert)).fingerprint256;
      expect(new X509Certificate(readFileSync(paths.gatewayCert)).checkIssued(new X509Certificate(bundle))).toBe(true);
      // seen from the hospital's network, each node's gateway: the new certificate, verified against the new bundle
      for (const node of ['n1', 'n2', 'n3'] as NodeName[]) expect(await presentedOn(node, caFile), node).toBe(want);
      // one CA and one gateway certificate secret left in the swarm: the old ones went with their tasks
      const secrets = (await onNode(MANAGER, ['secret', 'ls', '--format', '{{.Name}}'])).out.split('\n');
      for (const key of ['ca.pem', 'gateway.pem', 'gateway.key']) expect(secrets.filter((n) => n.startsWith(`${stack}_${key}-`)), key).toHaveLength(1);
      const results = await client.stop();
      const { line } = throughBalancer(results);
      say(`cert renew --renew-ca: ${secondsSince(t0)} s; ${line}`);
      expect(oldCa.fingerprint256).not.toBe(result.ca.fingerprint256);
      // every request sent once the renewal had returned succeeds
      expect(results.filter((x) => x.at >= done && !x.ok)).toEqual([]);
      await expectAccepted();
    } finally {
      await client.stop();
    }
  }, 900_000);

  it('backup while the stack serves and once it is down; restore into a new directory; up on the restored data is ACCEPTED and serves the same record', async () => {
    const archive = join(tempDir('hapi-swarm-backup-'), 'site.tar');
    const env = { HOSPITAL_API_BACKUP_PASSPHRASE: 'swarm tier passphrase, long enough' };
    const backup = await cli(['backup', '--out', archive, '--json'], env);
    expect(backup.code, `${backup.out}\n${backup.err}`).toBe(0);
    const kinds = (JSON.parse(backup.out).result.parts as Array<{ kind: string }>).map((p) => p.kind);
    expect(kinds.filter((k) => k.endsWith('-database')).sort()).toEqual(['fhir-database', 'gateway-database']);
    expect(backup.err).toMatch(/pg_dump in the ops task/);
    // the archive is not the whole audit trail, and says so
    expect(backup.err).toContain(`the audit logs are not in this archive: on a swarm each node that runs an API task keeps its own audit log, in its volume ${stack}_api-audit`);
    // the restored site takes the same ports: the old stack goes first (its volumes stay on their node)
    await platformOff();
    const down = await cli(['down']);
    expect(down.code, down.err).toBe(0);
    // a stack that is down is backed up too: its databases and ops alone, removed again after the dump
    const stoppedArchive = join(dirname(archive), 'stopped.tar');
    const stopped = await cli(['backup', '--out', stoppedArchive, '--json'], env);
    expect(stopped.code, `${stopped.out}\n${stopped.err}`).toBe(0);
    expect(stopped.err).toMatch(/with its databases and ops alone, for the dump/);
    expect((JSON.parse(stopped.out).result.parts as Array<{ kind: string }>).filter((p) => p.kind.endsWith('-database'))).toHaveLength(2);
    expect((await onNode(MANAGER, ['service', 'ls', '-q', '--filter', `label=com.docker.stack.namespace=${stack}`])).out.trim()).toBe('');
    dir = tempDir('hapi-swarm-restored-');
    stack = projectName(dir);
    const restore = await cli(['restore', archive, '--json'], env);
    expect(restore.code, `${restore.out}\n${restore.err}`).toBe(0);
    expect(restore.err).toMatch(/pg_restore of .* through the ops task/);
    // restore deployed the databases alone and removed them again: nothing of the new stack runs
    expect((await onNode(MANAGER, ['service', 'ls', '-q', '--filter', `label=com.docker.stack.namespace=${stack}`])).out.trim()).toBe('');
    // the same restore again into this path (so this stack name, so these volumes, which now hold
    // data) is refused before anything is written: the directory stays empty, no stack is left
    renameSync(dir, `${dir}.first`);
    mkdirSync(dir);
    // (the stopped stack's archive: read, decrypted and checked in full before the refusal)
    const again = await cli(['restore', stoppedArchive, '--json'], env);
    expect(again.code, `${again.out}\n${again.err}`).toBe(2);
    expect(JSON.parse(again.out).error.code).toBe('ERR_RESTORE_NOT_EMPTY');
    expect(again.err + again.out).toMatch(/already holds \d+ tables/);
    expect(readdirSync(dir)).toEqual([]);
    expect((await onNode(MANAGER, ['service', 'ls', '-q', '--filter', `label=com.docker.stack.namespace=${stack}`])).out.trim()).toBe('');
    rmSync(dir, { recursive: true });
    renameSync(`${dir}.first`, dir);
    const up = await cli(['up']);
    expect(up.code, `${up.out}\n${up.err}`).toBe(0);
    await platformOn();
    await expectAccepted();
    // the record comes from the restored FHIR database, through the restored gateway's consumer and key
    await expectWholeRecord((await nodesOf('hospital-api'))[0]!, "the restored stack's API");
  }, 1_800_000);

  it('a lost worker that runs one of each of Kong, HAPI and the API: new records succeed within 20 s, and the replicas run on the remaining nodes', async () => {
    const [kongNodes, hapiNodes, apiNodes] = [await nodesOf('kong'), await nodesOf('hapi'), await nodesOf('hospital-api')];
    expect(hapiNodes).toHaveLength(2);
    // a worker that runs a gateway, a HAPI and an API task (the gateway and the API run on every node
    // since the scale to three; HAPI's two replicas are spread over two nodes, so one worker at least has one)
    const victim = (['n2', 'n3'] as NodeName[]).find((n) => kongNodes.includes(n) && hapiNodes.includes(n) && apiNodes.includes(n));
    expect(victim, `kong ${kongNodes} hapi ${hapiNodes} api ${apiNodes}`).toBeDefined();
    // the manager: the node the client uses survives (the load balancer has dropped the lost one)
    const survivor = MANAGER;
    const patient = dataset.patients[0]!;
    const body = JSON.stringify({ platformCareId: patient.careId, token: tokenOf(tokens, patient.careId) });
    expect((await postFromBridge(survivor, body)).status).toBe(200);
    // a steady client of the surviving API node (the load balancer has dropped the lost one)
    const client = steadyClient(async () => {
      const at = Date.now();
      const r = await postFromBridge(survivor, body);
      return { at, ok: r.code === 0 && r.status === 200 };
    });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const t0 = Date.now();
    await swarmScript(['kill', victim!]);
    try {
      // the replicas run on the two other nodes (Kong and the API at most one per node: the third waits
      // for a node; HAPI's lost replica comes back beside the one that stayed)
      await until(async () => [await nodesOf('kong'), await nodesOf('hospital-api'), [...new Set(await nodesOf('hapi'))]], {
        what: `kong, HAPI and the API on the two nodes other than ${victim}`,
        timeoutMs: 180_000,
        intervalMs: 1000,
        ok: (lists) => lists.every((nodes) => nodes.length === 2 && !nodes.includes(victim!)),
      });
      const back = secondsSince(t0);
      // and records keep coming for 20 s more
      await new Promise((resolve) => setTimeout(resolve, 20_000));
      const after = (await client.stop()).filter((r) => r.at >= t0);
      const failed = after.filter((r) => !r.ok);
      const lastFailure = failed.length ? ` (the last ${((failed[failed.length - 1]!.at - t0) / 1000).toFixed(1)} s after the kill)` : '';
      say(`${victim} killed: ${failed.length} of ${after.length} requests to ${survivor} failed${lastFailure}; kong, HAPI and the API back on two nodes after ${back} s`);
      // requests in flight on the lost node may fail; every request started 20 s after the kill succeeds
      expect(after.filter((r) => r.at - t0 >= 20_000 && !r.ok)).toEqual([]);
      expect(after.filter((r) => r.at - t0 >= 20_000).length).toBeGreaterThan(10);
    } finally {
      await client.stop();
    }
  }, 600_000);

  it("an install whose Kong and HAPI databases are the hospital's Postgres server outside the swarm, over verified TLS: install, consumer, verify ACCEPTED, a record, a backup", async () => {
    // the hospital's server: a container of n1's engine on n1's own network (198.51.100.11:5432), in no stack;
    // tasks on every node reach it through their node's docker_gwbridge (scripts/swarm-nodes.mjs routes them back)
    const server = { container: 'hospital-postgres', address: NODE_ADDRESS[MANAGER], port: 5432 };
    const ports = { api: 9100, gatewayHttps: 8543, fhir: 8180 };
    dir = tempDir('hapi-swarm-external-');
    stack = projectName(dir);
    // the hospital sets each role's password to the file install reads it from (no password in a URL or a flag)
    const secrets = join(dir, 'secrets');
    mkdirSync(secrets, { mode: 0o700 });
    const passwords = { gw: randomBytes(18).toString('hex'), fhir_owner: randomBytes(18).toString('hex') };
    writeFileSync(join(secrets, 'kong-pg-password'), `${passwords.gw}\n`, { mode: 0o600 });
    writeFileSync(join(secrets, 'hapi-pg-password'), `${passwords.fhir_owner}\n`, { mode: 0o600 });
    const superuser = join(tempDir('hapi-swarm-pgsuper-'), 'password');
    writeFileSync(superuser, `${randomBytes(18).toString('hex')}\n`, { mode: 0o600 });
    // its TLS: a certificate for its address from the hospital's database CA (what install gets as
    // --database-ca), and a pg_hba.conf that takes TCP connections over TLS only, so a task that
    // connected without TLS would be refused and the install would fail
    const dbCa = generateCa({ commonName: 'Hospital database CA (swarm tier)' });
    const serverTls = issueCertificate(dbCa, { commonName: server.address, hosts: [server.address], usage: 'server' });
    const tlsDir = tempDir('hapi-swarm-pgtls-');
    const caFile = join(tlsDir, 'database-ca.pem');
    writeFileSync(caFile, dbCa.certPem);
    writeFileSync(join(tlsDir, 'server.crt'), serverTls.certPem);
    writeFileSync(join(tlsDir, 'server.key'), serverTls.keyPem, { mode: 0o600 });
    writeFileSync(join(tlsDir, 'pg_hba.conf'), 'local all all trust\nhostssl all all all scram-sha-256\n');
    // the image's postgres user reads them (999 in docker-library's image, Debian's own uid in the tier's);
    // the key must be its own and 0600 (PostgreSQL docs, "SSL Support")
    const idOf = async (flag: string) => Number((await onNode(MANAGER, ['run', '--rm', '--network', 'none', '--entrypoint', 'id', TIER_IMAGES.postgres, flag, 'postgres'])).out.trim());
    const [pgUid, pgGid] = [await idOf('-u'), await idOf('-g')];
    for (const f of ['', 'server.crt', 'server.key', 'pg_hba.conf']) chownSync(join(tlsDir, f), pgUid, pgGid);
    await onNode(MANAGER, [
      'run', '--detach', '--name', server.container, '--network', 'host', '--env', 'POSTGRES_USER=postgres', '--env', 'POSTGRES_PASSWORD_FILE=/run/superuser',
      '--mount', `type=bind,source=${superuser},target=/run/superuser,readonly`, '--mount', `type=bind,source=${tlsDir},target=/tls,readonly`, TIER_IMAGES.postgres,
      'postgres', '-c', 'ssl=on', '-c', 'ssl_cert_file=/tls/server.crt', '-c', 'ssl_key_file=/tls/server.key', '-c', 'hba_file=/tls/pg_hba.conf',
    ]);
    const onServer = (sql: string) =>
      execa('docker', ['exec', '-i', server.container, 'psql', '--no-psqlrc', '-v', 'ON_ERROR_STOP=1', '-qtA', '-U', 'postgres', '-d', 'postgres'], {
        input: sql, reject: false, env: { DOCKER_HOST: `unix://${nodeSocket(MANAGER)}`, DOCKER_API_VERSION: '1.41' },
      });
    // the server for good, not the entrypoint's first-start one, which also answers on the socket but listens on no address
    await until(() => onServer("SELECT current_setting('listen_addresses');"), {
      what: "the hospital's Postgres server, listening",
      timeoutMs: 60_000,
      intervalMs: 500,
      ok: (r) => r.exitCode === 0 && String(r.stdout).trim() === '*',
    });
    const created = await onServer(
      `CREATE ROLE gw LOGIN PASSWORD '${passwords.gw}'; CREATE DATABASE gateway OWNER gw; CREATE ROLE fhir_owner LOGIN PASSWORD '${passwords.fhir_owner}'; CREATE DATABASE fhir OWNER fhir_owner;`,
    );
    expect(created.exitCode, String(created.stderr)).toBe(0);
    const at = `${server.address}:${server.port}`;
    const install = await cli([
      'install', '--runtime', 'swarm', '--host', SITE, '--generate-ca', '--json',
      '--platform-url', `http://platform:${PLATFORM_PORT}`, '--identifier-system', 'urn:hospital-api:platform-care-id',
      '--kong-image', TIER_IMAGES.kong, '--hapi-image', TIER_IMAGES.hapi, '--postgres-image', TIER_IMAGES.postgres, '--api-image', TIER_IMAGES.api,
      '--gateway-replicas', '1', '--api-replicas', '1', '--fhir-replicas', '1', '--overlay-encryption', 'off',
      '--kong-database-url', `postgres://gw@${at}/gateway`, '--fhir-database-url', `postgres://fhir_owner@${at}/fhir`, '--database-ca', caFile,
      '--api-port', String(ports.api), '--gateway-https-port', String(ports.gatewayHttps), '--fhir-port', String(ports.fhir),
    ]);
    expect(install.code, `${install.out}\n${install.err}`).toBe(0);
    expect(readFileSync(join(secrets, 'kong-pg-password'), 'utf8').trim() === passwords.gw, 'the password the hospital set is kept').toBe(true);
    // no database service of the stack's own; Kong's migrations and HAPI made their tables in the hospital's databases
    const services = (await onNode(MANAGER, ['service', 'ls', '--format', '{{.Name}}', '--filter', `label=com.docker.stack.namespace=${stack}`])).out.split('\n').filter(Boolean);
    expect(services.filter((n) => n.endsWith('-database'))).toEqual([]);
    const tables = async (db: string) => Number(String((await onServer(`\\c ${db}\nSELECT count(*) FROM pg_tables WHERE schemaname = 'public';`)).stdout).trim().split('\n').pop());
    expect(await tables('gateway')).toBeGreaterThan(0);
    expect(await tables('fhir')).toBeGreaterThan(0);
    // HAPI's connections to it are TLS (and could be nothing else: pg_hba.conf has hostssl only)
    const sessions = String((await onServer("SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.usename = 'fhir_owner';")).stdout).trim().split('\n').filter(Boolean);
    expect(sessions.length).toBeGreaterThan(0);
    expect(sessions.every((ssl) => ssl === 't'), sessions.join(',')).toBe(true);

    await platformOn();
    appendFileSync(installPaths(dir).apiEnv, `FHIR_PAGE_SIZE=${PAGE_SIZE}\n`);
    const consumer = await cli(['consumer', 'create', 'tier-hospital', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    const load = await cli(['fhir', 'load', join(dataDir, '00-shared.json'), join(dataDir, '01-patients.ndjson')]);
    expect(load.code, load.err).toBe(0);
    siteAt((await nodesOf('kong'))[0]!);
    await expectAccepted();
    await expectWholeRecord((await nodesOf('hospital-api'))[0]!, "the API, HAPI's data in the hospital's database,", ports.api);

    // backup dumps the hospital's databases through the ops task, by the address in the URLs
    const archive = join(tempDir('hapi-swarm-backup-'), 'external.tar');
    const backup = await cli(['backup', '--out', archive, '--json'], { HOSPITAL_API_BACKUP_PASSPHRASE: 'swarm tier passphrase, long enough' });
    expect(backup.code, `${backup.out}\n${backup.err}`).toBe(0);
    expect(backup.err).toContain(`(gateway at ${server.address}:${server.port}): pg_dump in the ops task`);
    expect((JSON.parse(backup.out).result.parts as Array<{ kind: string }>).filter((p) => p.kind.endsWith('-database'))).toHaveLength(2);
  }, 900_000);
});

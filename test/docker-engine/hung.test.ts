/**
 * Issue 12, "the supervisor replaces a component that is alive but has not
 * answered its health probe for a bounded time", on a real Docker engine:
 * one install, then the hospital-api process, the FHIR door and then every process of the
 * kong container are SIGSTOPped from the host (alive, never answering), and
 * each container must be restarted by the engine (a `die` with SIGKILL's 137,
 * then a `start`, a higher RestartCount, a new process) within a bounded time,
 * after which POST /api/patients answers again through the published API port,
 * the gateway and the FHIR server. While kong hangs, /api/ready still answers
 * within 2 s (503, naming the FHIR side). Without templates/compose.yaml's
 * `init: true` and hung-probe healthchecks the engine marks the container
 * unhealthy and nothing else happens, and these tests fail on the deadline.
 *
 * HAPI's real image is distroless (no shell), so no probe can run inside it:
 * hapi-watchdog runs the same probe from the PID namespace it shares with HAPI
 * (both join hapi-pidns, templates/compose.yaml "Hung components"). The third
 * case SIGSTOPs HAPI's processes and checks that the watchdog kills them, the
 * engine restarts the hapi container (the watchdog and the holder untouched,
 * HAPI back in the holder's namespace), /api/ready answers within 2 s meanwhile,
 * and a record flows again.
 *
 * The signals are sent from a throw-away container in the host's pid namespace
 * (so no root is needed on the host, and the target's PID 1 is no obstacle).
 * With HOSPITAL_API_DOCKER_E2E_IMAGES=real (.github/workflows/docker-e2e.yml)
 * the same test runs on the real Kong 3.9.3 image and the repository's
 * Dockerfile. Without an engine every test is skipped with one plain line.
 */
import { chownSync, existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliAt, runCli } from '../helpers/cli.js';
import { postPatient } from '../helpers/patients.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';
import { freePorts } from '../../src/util/port-check.js';
import { writeTokens } from '../../src/demo/tokens.js';
import { generateDataset } from '../../src/fhir-data/generate/dataset.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { builtApiImage, HAPI_IMAGE_USER } from '../../src/runtime/container/images.js';
import { HUNG_PROBE } from '../../src/runtime/container/hung-check.js';
import { projectName } from '../../src/runtime/container/project.js';
import { VERSION } from '../../src/version.js';
import { findCompose } from '../../src/runtime/container/compose.js';
import type { ContainerInspect } from '../../src/runtime/docker/parse.js';
import { buildImages, docker, engineAnswers, sayNoEngine, TIER_IMAGES } from './engine.js';

const engine = await engineAnswers();
if (!engine) sayNoEngine();
/** .github/workflows/docker-e2e.yml: the real images and the repository's Dockerfile, no stand-ins. */
const REAL = process.env.HOSPITAL_API_DOCKER_E2E_IMAGES === 'real';
const API_IMAGE = REAL ? builtApiImage(VERSION) : TIER_IMAGES.api;
const REPO = fileURLToPath(new URL('../../', import.meta.url));

const SEED = 'docker-engine-hung';
const SIZES = '5-15';
const PLATFORM_PORT = 8088;
/**
 * A hang is acted on within failures × (interval + the probe's time-out) (render.ts
 * HUNG_PROBE; the engine waits the interval after each probe ends); the rest is the
 * engine's restart and the component's start on two shared cores. A deadline, not a
 * timing target.
 */
const REPLACED_WITHIN_MS = HUNG_PROBE.failures * (HUNG_PROBE.intervalS + HUNG_PROBE.timeoutS) * 1000 + 60_000;

const dir = tempDir('hapi-docker-hung-');
const platformDir = tempDir('hapi-docker-hung-platform-');
const project = projectName(dir);
const platformName = `${project}-platform`;
let ports: Record<string, number> = {};
const timings: Record<string, number> = {};
const stopped: number[] = [];

const cli = cliAt(dir, { timeout: 900_000 });

async function container(service: string): Promise<ContainerInspect & { Id: string; RestartCount?: number; State: NonNullable<ContainerInspect['State']> & { Pid?: number; StartedAt?: string }; HostConfig?: { PidMode?: string } }> {
  const ids = (await docker(['ps', '-aq', '--filter', `label=com.docker.compose.project=${project}`, '--filter', `label=com.docker.compose.service=${service}`])).out.split('\n').filter(Boolean);
  expect(ids.length, `${service} containers`).toBe(1);
  return (JSON.parse((await docker(['inspect', ids[0]!])).out) as never[])[0]!;
}

/** Host pids of every process in the container's pid namespace but its PID 1 (proc(5): /proc/pid/task/tid/children). */
function descendants(pid: number): number[] {
  const out: number[] = [];
  const walk = (p: number) => {
    let children: number[] = [];
    try {
      children = readdirSync(`/proc/${p}/task`).flatMap((t) => readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    } catch {
      return;
    }
    for (const c of children) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

function alive(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/** Sends `signal` to host pids from a container in the host's pid namespace (root there, none needed here). */
async function signal(pids: number[], name: 'SIGSTOP' | 'SIGCONT'): Promise<void> {
  if (pids.length === 0) return;
  await docker(['run', '--rm', '--pid=host', '--user', '0', '--network', 'none', '--entrypoint', 'node', API_IMAGE, '-e',
    `for (const p of process.argv.slice(1)) { try { process.kill(Number(p), '${name}'); } catch (e) { if (e.code !== 'ESRCH') throw e; } }`, ...pids.map(String)]);
}

/** Polls until `probe` holds, or fails after `ms`, naming what it waited for (test/helpers/until.ts). */
const waitUntil = (what: string, probe: () => Promise<boolean>, ms: number) => until(probe, { what, timeoutMs: ms, intervalMs: 500 });

/** The engine's events for one container, as they happen (`docker events`, JSON lines). */
function watchEvents(id: string): { events: Array<{ status: string; exitCode?: string; at: number }>; stop: () => void; child: ResultPromise } {
  const events: Array<{ status: string; exitCode?: string; at: number }> = [];
  const child = execa('docker', ['events', '--filter', `container=${id}`, '--format', '{{json .}}'], { reject: false, buffer: false, stdin: 'ignore' });
  let rest = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    rest += chunk.toString('utf8');
    const lines = rest.split('\n');
    rest = lines.pop()!;
    for (const l of lines) {
      if (!l.trim()) continue;
      const e = JSON.parse(l) as { status?: string; Actor?: { Attributes?: Record<string, string> } };
      events.push({ status: e.status ?? '', exitCode: e.Actor?.Attributes?.exitCode, at: Date.now() });
    }
  });
  return { events, stop: () => child.kill(), child };
}

async function getJson(path: string, timeoutMs: number) {
  const res = await request(`http://127.0.0.1:${ports.api}${path}`, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
}

const dataset = generateDataset({ patients: 1, seed: SEED, sizes: SIZES });
let tokens: Array<{ careId: string; token: string }> = [];

/** The first patient's record, waiting at most `timeoutMs` for the answer's headers and each body chunk. */
const firstRecord = (timeoutMs = 30_000) => postPatient(ports.api!, tokens[0]!.careId, tokens[0]!.token, { timeoutMs });

/**
 * SIGSTOPs every process of `service` but docker-init, then waits for the engine to
 * replace the container; returns what it saw.
 */
async function hangAndAwaitReplacement(service: string, whileHung: () => Promise<void>) {
  const before = await container(service);
  const pid1 = before.State.Pid!;
  // every process of the component: docker-init's descendants, or (without `init`) PID 1 and its descendants
  const underInit = readFileSync(`/proc/${pid1}/comm`, 'utf8').trim() === 'docker-init';
  const victims = underInit ? descendants(pid1) : [pid1, ...descendants(pid1)];
  expect(victims.length, `${service} has processes under its PID 1`).toBeGreaterThan(0);
  const watch = watchEvents(before.Id);
  try {
    const t0 = Date.now();
    stopped.push(...victims);
    await signal(victims, 'SIGSTOP');
    // stopped: state T in /proc (proc(5)), every one of them
    const state = (pid: number) => {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2)[0];
    };
    // One that exited meanwhile (a postgres backend ending between the listing and the signal) answers nothing either.
    await waitUntil(`every ${service} process stopped`, async () => victims.every((pid) => !alive(pid) || state(pid) === 'T'), 10_000);
    await whileHung();
    await waitUntil(`the engine to restart the hung ${service}`, async () => watch.events.some((e) => e.status === 'start'), REPLACED_WITHIN_MS);
    const replacedMs = Date.now() - t0;
    timings[`${service} replaced`] = replacedMs;
    const after = await container(service);
    return { before, after, victims, events: watch.events.map((e) => `${e.status}${e.exitCode ? ` ${e.exitCode}` : ''}`), replacedMs };
  } finally {
    watch.stop();
    // not replaced (the failure this file exists to catch): let the next test start from a working stack
    await signal(victims.filter(alive), 'SIGCONT');
  }
}

/**
 * What the engine shows of a container its restart policy started again after a SIGKILL: it died of
 * SIGKILL (128 + 9) before it started, the same container with one more restart and a new main
 * process, and none of the stopped processes is left.
 */
function expectRestartedByPolicy(r: Awaited<ReturnType<typeof hangAndAwaitReplacement>>): void {
  expect(r.events).toContain('die 137');
  expect(r.events.indexOf('die 137')).toBeLessThan(r.events.indexOf('start'));
  expect(r.after.Id).toBe(r.before.Id);
  expect(r.after.RestartCount).toBe((r.before.RestartCount ?? 0) + 1);
  expect(r.after.State.StartedAt).not.toBe(r.before.State.StartedAt);
  expect(r.after.State.Pid).not.toBe(r.before.State.Pid);
  for (const pid of r.victims) expect(alive(pid), `stopped pid ${pid}`).toBe(false);
}

describe.skipIf(!engine)('docker runtime replaces a hung component (issue 12)', () => {
  beforeAll(async () => {
    const t0 = Date.now();
    if (REAL) await docker(['build', '-t', API_IMAGE, REPO], { timeout: 1_800_000 });
    else await buildImages();
    timings.images = Date.now() - t0;
    const [api, fhir, gatewayHttps] = (await freePorts(3)) as [number, number, number];
    ports = { api, fhir, gatewayHttps };
    tokens = writeTokens(platformDir, dataset.patients.map((p) => p.careId));
    const t1 = Date.now();
    const install = await cli([
      'install', '--runtime', 'docker', '--host', '127.0.0.1', '--generate-ca', '--platform-url', `http://platform:${PLATFORM_PORT}`, '--identifier-system', 'urn:hospital-api:platform-care-id',
      '--api-port', String(ports.api), '--fhir-port', String(ports.fhir), '--gateway-https-port', String(ports.gatewayHttps),
      ...(REAL ? [] : ['--kong-image', TIER_IMAGES.kong, '--hapi-image', TIER_IMAGES.hapi, '--postgres-image', TIER_IMAGES.postgres, '--api-image', TIER_IMAGES.api]),
    ]);
    expect(install.code, `${install.out}\n${install.err}`).toBe(0);
    // the platform stand-in on the project's network, as stack.test.ts runs it
    for (const p of [platformDir, join(platformDir, 'demo'), ...readdirSync(join(platformDir, 'demo')).map((f) => join(platformDir, 'demo', f))]) chownSync(p, 1000, 1000);
    await docker([
      'run', '-d', '--name', platformName, '--network', `${project}_default`, '--network-alias', 'platform', '--user', '1000:1000',
      '-v', `${platformDir}:/platform:ro`, API_IMAGE, 'demo', '--platform-stand-in', '--listen', `0.0.0.0:${PLATFORM_PORT}`, '--dir', '/platform',
    ]);
    const consumer = await cli(['consumer', 'create', 'hung-hospital', '--write-env']);
    expect(consumer.code, consumer.err).toBe(0);
    const data = join(dir, 'hung-data');
    const gen = await runCli(['fhir', 'generate', '--patients', '1', '--seed', SEED, '--sizes', SIZES, '--out', data]);
    expect(gen.exitCode, String(gen.stderr)).toBe(0);
    // --dir: the installation's FHIR address, through its FHIR door with the install's token
    const load = await runCli(['fhir', 'load', join(data, '00-shared.json'), join(data, '01-patients.ndjson'), '--dir', dir]);
    expect(load.exitCode, String(load.stderr)).toBe(0);
    timings.install = Date.now() - t1;
  }, 1_800_000);

  afterAll(async () => {
    if (!engine) return;
    // a process left stopped would hold compose's stop for its whole grace period
    await signal(stopped.filter(alive), 'SIGCONT').catch(() => undefined);
    await docker(['rm', '-f', platformName], { allowFail: true });
    const compose = await findCompose();
    if (compose) {
      const [bin, ...prefix] = compose.argv as [string, ...string[]];
      await execa(bin, [...prefix, '-p', project, '-f', join(installPaths(dir).docker, 'compose.yaml'), 'down', '--volumes', '--remove-orphans'], { reject: false, timeout: 300_000 });
    }
    process.stdout.write(`docker hung timings (s): ${Object.entries(timings).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join(', ')}\n`);
    removeTempDirs();
  }, 600_000);

  it('runs kong, hospital-api, the FHIR door and the databases under docker-init, each answering, ready and healthy', async () => {
    for (const service of ['kong', 'hospital-api', 'fhir-door', 'kong-database', 'hapi-database']) {
      const c = await container(service);
      expect((c as { HostConfig?: { Init?: boolean } }).HostConfig?.Init, service).toBe(true);
      // PID 1 in the container is docker-init, not the component (pid_namespaces(7))
      expect(readFileSync(`/proc/${c.State.Pid}/comm`, 'utf8').trim(), service).toBe('docker-init');
      await waitUntil(`${service} healthy`, async () => (await container(service)).State.Health?.Status === 'healthy', 60_000);
    }
    const ready = await getJson('/api/ready', 5_000);
    expect(ready).toEqual({ status: 200, body: { platform: 'ok', fhir: 'ok', audit: 'ok' } });
    const res = await firstRecord();
    expect(res.status).toBe(200);
    expect(res.resources.length).toBeGreaterThan(0);
  }, 120_000);

  it('a SIGSTOPped hospital-api is killed by its healthcheck and restarted by the engine; the API answers again', async () => {
    const replaced = await hangAndAwaitReplacement('hospital-api', async () => {
      // hung: the published port accepts (docker-proxy) but the API never answers
      await expect(getJson('/api/health-check', 2_000)).rejects.toThrow();
    });
    expectRestartedByPolicy(replaced);
    const { after } = replaced;
    // the probe said why, in the container's log
    const logs = await docker(['logs', after.Id]);
    expect(logs.out + logs.err).toMatch(new RegExp(`hung-probe: no answer from http://127\\.0\\.0\\.1:9000/api/health-check within 3000 ms, ${HUNG_PROBE.failures} probe\\(s\\) in a row: SIGKILL to pid \\d+`));
    await waitUntil('the restarted API answering /api/health-check', async () => (await getJson('/api/health-check', 2_000)).status === 200, 60_000);
    await waitUntil('the restarted API ready', async () => (await getJson('/api/ready', 3_000)).status === 200, 60_000);
    const res = await firstRecord();
    expect(res.status).toBe(200);
    expect(res.resources.length).toBeGreaterThan(0);
  }, REPLACED_WITHIN_MS + 300_000);

  it('a SIGSTOPped FHIR door is killed by its healthcheck and restarted by the engine; the FHIR port answers again', async () => {
    const metadata = async (timeoutMs: number) => {
      const res = await request(`http://127.0.0.1:${ports.fhir}/fhir/metadata`, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
      return { status: res.statusCode, body: (await res.body.json()) as { resourceType?: string } };
    };
    expect((await metadata(10_000)).body.resourceType).toBe('CapabilityStatement');
    const replaced = await hangAndAwaitReplacement('fhir-door', async () => {
      // hung: the published port accepts (docker-proxy) but the door never answers
      await expect(metadata(2_000)).rejects.toThrow();
    });
    expectRestartedByPolicy(replaced);
    const logs = await docker(['logs', replaced.after.Id]);
    expect(logs.out + logs.err).toMatch(new RegExp(`hung-probe: no answer from http://127\\.0\\.0\\.1:8080/ within 3000 ms, ${HUNG_PROBE.failures} probe\\(s\\) in a row: SIGKILL to pid \\d+`));
    await waitUntil('the restarted door answering /fhir/metadata', async () => (await metadata(3_000).catch(() => ({ status: 0 }))).status === 200, 60_000);
  }, REPLACED_WITHIN_MS + 300_000);

  it('a SIGSTOPped kong is killed by its healthcheck and restarted; /api/ready answers within 2 s meanwhile; records flow again', async () => {
    const replaced = await hangAndAwaitReplacement('kong', async () => {
      // whatever hangs behind it, /api/ready answers within 2 s, and says what is wrong
      let slowest = 0;
      await waitUntil('/api/ready to see the hung gateway', async () => {
        const t0 = Date.now();
        const r = await getJson('/api/ready', 10_000);
        slowest = Math.max(slowest, Date.now() - t0);
        return r.status === 503 && JSON.stringify(r.body).includes('fhir timeout');
      }, 30_000);
      expect(slowest).toBeLessThan(2_000);
    });
    expectRestartedByPolicy(replaced);
    const { after } = replaced;
    const logs = await docker(['logs', after.Id]);
    expect(logs.out + logs.err).toMatch(new RegExp(`no answer from Kong's admin API within 3 s, ${HUNG_PROBE.failures} probe\\(s\\) in a row: SIGKILL to pid \\d+`));
    // the real path again: API → kong (provisioning kept) → FHIR server
    await waitUntil('a record through the restarted gateway', async () => (await firstRecord(5_000)).status === 200, 120_000);
    await waitUntil('the API ready again', async () => (await getJson('/api/ready', 3_000)).status === 200, 30_000);
  }, REPLACED_WITHIN_MS + 300_000);

  it('a SIGSTOPped HAPI is killed by hapi-watchdog and restarted by the engine; /api/ready answers within 2 s meanwhile; records flow again', async () => {
    const holderBefore = await container('hapi-pidns');
    const watchdogBefore = await container('hapi-watchdog');
    const hapiBefore = await container('hapi');
    const doorBefore = await container('fhir-door');
    // HAPI and its watchdog in the holder's PID namespace (namespaces(7): the same /proc/pid/ns/pid link)
    const pidns = (pid: number) => readlinkSync(`/proc/${pid}/ns/pid`);
    expect(hapiBefore.HostConfig?.PidMode).toBe(`container:${holderBefore.Id}`);
    expect(watchdogBefore.HostConfig?.PidMode).toBe(`container:${holderBefore.Id}`);
    expect(pidns(hapiBefore.State.Pid!)).toBe(pidns(holderBefore.State.Pid!));
    expect(pidns(watchdogBefore.State.Pid!)).toBe(pidns(holderBefore.State.Pid!));
    // the watchdog is HAPI's uid and has no capability (proc(5) status: Uid, CapEff)
    const status = readFileSync(`/proc/${watchdogBefore.State.Pid}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(HAPI_IMAGE_USER.split(':')[0]);
    expect(/^CapEff:\s+(\w+)/m.exec(status)?.[1]).toBe('0000000000000000');
    expect(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${hapiBefore.State.Pid}/status`, 'utf8'))?.[1]).toBe(HAPI_IMAGE_USER.split(':')[0]);
    await waitUntil('the watchdog watching HAPI', async () => {
      const l = await docker(['logs', watchdogBefore.Id]);
      return (l.out + l.err).includes('hung-probe: watching pid');
    }, 60_000);

    const replaced = await hangAndAwaitReplacement('hapi', async () => {
      // the FHIR port accepts (docker-proxy) and never answers
      await expect(request(`http://127.0.0.1:${ports.fhir}/fhir/metadata`, { headersTimeout: 2_000, bodyTimeout: 2_000 }).then((r) => r.body.text())).rejects.toThrow();
      let slowest = 0;
      const seen: string[] = [];
      // the FHIR side fails by the API's own 1 s deadline or its request's time-out, whichever fires first
      await waitUntil('/api/ready to see the hung FHIR server', async () => {
        const t0 = Date.now();
        const r = await getJson('/api/ready', 10_000);
        slowest = Math.max(slowest, Date.now() - t0);
        seen.push(`${r.status} ${JSON.stringify(r.body)}`);
        return r.status === 503 && /fhir (timeout|ERR_API_FHIR_TIMEOUT)/.test(JSON.stringify(r.body));
      }, 20_000).catch((err: Error) => {
        throw new Error(`${err.message}; it answered: ${seen.slice(-3).join(' | ')}`);
      });
      expect(slowest).toBeLessThan(2_000);
    });
    // every stopped process is gone, the stand-in's server child included (none left in the holder's namespace)
    expectRestartedByPolicy(replaced);
    const { after } = replaced;
    // the watchdog said why, and it and the holder were not restarted: only HAPI was
    const logs = await docker(['logs', watchdogBefore.Id]);
    expect(logs.out + logs.err).toMatch(new RegExp(`hung-probe: no answer from http://hapi:8080/fhir/metadata within 3000 ms, ${HUNG_PROBE.failures} probe\\(s\\) in a row: SIGKILL to pid\\(s\\) \\d+`));
    const [holderAfter, watchdogAfter, doorAfter] = [await container('hapi-pidns'), await container('hapi-watchdog'), await container('fhir-door')];
    // the FHIR door in front of the hung HAPI kept answering its own probe: not restarted either
    for (const [b, a] of [[holderBefore, holderAfter], [watchdogBefore, watchdogAfter], [doorBefore, doorAfter]] as const) {
      expect(a.Id).toBe(b.Id);
      expect(a.RestartCount).toBe(b.RestartCount);
      expect(a.State.StartedAt).toBe(b.State.StartedAt);
      expect(a.State.Running).toBe(true);
    }
    // the restarted HAPI is back in the holder's namespace, and watched again (a new process, a new count)
    expect(pidns(after.State.Pid!)).toBe(pidns(holderAfter.State.Pid!));
    await waitUntil('the watchdog watching the restarted HAPI', async () => {
      const l = await docker(['logs', watchdogAfter.Id]);
      return ((l.out + l.err).match(/hung-probe: watching pid/g) ?? []).length >= 2;
    }, 60_000);
    await waitUntil('the restarted HAPI answering /fhir/metadata', async () => {
      const r = await request(`http://127.0.0.1:${ports.fhir}/fhir/metadata`, { headersTimeout: 3_000, bodyTimeout: 3_000 });
      await r.body.text();
      return r.statusCode === 200;
    }, 120_000);
    // the real path again: API → kong → the restarted FHIR server, its data kept (Postgres)
    await waitUntil('a record through the restarted FHIR server', async () => {
      const r = await firstRecord(5_000);
      return r.status === 200 && r.resources.length > 0;
    }, 120_000);
    await waitUntil('the API ready again', async () => (await getJson('/api/ready', 3_000)).status === 200, 30_000);
  }, REPLACED_WITHIN_MS + 400_000);

  for (const db of ['kong-database', 'hapi-database']) {
    it(`a SIGSTOPped ${db} is killed by its healthcheck and restarted; its data kept, records flow again`, async () => {
      const replaced = await hangAndAwaitReplacement(db, async () => {
        // whatever hangs behind it, /api/ready answers within 2 s
        const t0 = Date.now();
        await getJson('/api/ready', 10_000);
        expect(Date.now() - t0).toBeLessThan(2_000);
      });
      expectRestartedByPolicy(replaced);
      const logs = await docker(['logs', replaced.after.Id]);
      expect(logs.out + logs.err).toMatch(new RegExp(`no answer from ${db} \\(pg_isready\\) within ${HUNG_PROBE.timeoutS} s, ${HUNG_PROBE.failures} probe\\(s\\) in a row: SIGKILL to pid \\d+ so the container restarts`));
      await waitUntil(`the restarted ${db} healthy`, async () => (await container(db)).State.Health?.Status === 'healthy', 120_000);
      // the real path again (kong's routes and consumer, HAPI's patients: all in the killed database)
      await waitUntil(`a record after ${db} was replaced`, async () => {
        const r = await firstRecord(5_000).catch(() => ({ status: 0, resources: [] }));
        return r.status === 200 && r.resources.length > 0;
      }, 180_000);
      await waitUntil('the API ready again', async () => (await getJson('/api/ready', 3_000)).status === 200, 60_000);
    }, REPLACED_WITHIN_MS + 500_000);
  }
});

/**
 * What the docker-tier test files share: the images (the stand-ins, or the
 * real ones under HOSPITAL_API_DOCKER_E2E_IMAGES=real, as
 * .github/workflows/docker-e2e.yml runs them), the install flags that choose
 * them, the real CLI on a tier install directory with its step timings, a
 * compose project's containers and volumes, and the purge after a file.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { SYNTHETIC_ID_SYSTEM } from '../../src/fhir-data/generate/model.js';
import { COMPOSE_HTTP_TIMEOUT_S, findCompose } from '../../src/runtime/container/compose.js';
import type { ContainerInspect } from '../../src/runtime/docker/parse.js';
import { builtApiImage } from '../../src/runtime/container/images.js';
import { projectName } from '../../src/runtime/container/project.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { VERSION } from '../../src/version.js';
import { writeTokens } from '../../src/demo/tokens.js';
import { freePorts } from '../../src/util/port-check.js';
import { BIN, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { until as untilHelper } from '../helpers/until.js';
import { buildImages, docker, TIER_IMAGES } from './engine.js';

/** .github/workflows/docker-e2e.yml: the real images and the repository's Dockerfile, no stand-ins. */
export const REAL = process.env.HOSPITAL_API_DOCKER_E2E_IMAGES === 'real';
export const API_IMAGE = REAL ? builtApiImage(VERSION) : TIER_IMAGES.api;
export const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** The install flags that choose the stand-ins; none with the real images (the defaults). */
export const IMAGE_FLAGS: readonly string[] = REAL
  ? []
  : ['--kong-image', TIER_IMAGES.kong, '--hapi-image', TIER_IMAGES.hapi, '--postgres-image', TIER_IMAGES.postgres, '--api-image', TIER_IMAGES.api];

/** Builds the API image from the repository (real images), or every tier image (cached between runs). */
export async function prepareImages(): Promise<void> {
  if (REAL) await docker(['build', '-t', API_IMAGE, REPO], { timeout: 1_800_000 });
  else await buildImages();
}

export type Timings = Record<string, number>;

export interface CliRun {
  code: number | undefined;
  out: string;
  err: string;
}

/**
 * The real CLI on `dir` (or `on`), each step's time added to `timings` under its command name. With
 * `hostsFile`, the CLI runs in a mount namespace of its own where that file is /etc/hosts: the site's
 * host name resolves for it (and for the docker and Compose commands it runs) as a hospital's DNS would,
 * and nothing else on the machine sees the name.
 */
export function tierCli(dir: string, timings: Timings, hostsFile?: string) {
  return async (args: string[], options: { env?: Record<string, string>; on?: string } = {}): Promise<CliRun> => {
    const t0 = Date.now();
    const run = { timeout: 900_000, ...(options.env ? { env: options.env } : {}) };
    const cliArgs = [...args, '--dir', options.on ?? dir];
    const r = hostsFile
      ? await execa('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', hostsFile, 'node', BIN, ...cliArgs], {
          reject: false,
          ...run,
          env: { NO_COLOR: '1', ...options.env },
        })
      : await runCli(cliArgs, run);
    const name = args.slice(0, args[0] === 'consumer' || args[0] === 'cert' ? 2 : 1).join(' ');
    timings[name] = (timings[name] ?? 0) + (Date.now() - t0);
    return { code: r.exitCode, out: String(r.stdout), err: String(r.stderr) };
  };
}

export function formatTimings(timings: Timings): string {
  return Object.entries(timings).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join(', ');
}

/** Every container of a compose project, running or not. */
export async function containersOf(project: string): Promise<ContainerInspect[]> {
  const ids = (await docker(['ps', '-aq', '--filter', `label=com.docker.compose.project=${project}`])).out.split('\n').filter(Boolean);
  return ids.length ? (JSON.parse((await docker(['inspect', ...ids])).out) as ContainerInspect[]) : [];
}

/** The running container of one service. */
export async function runningContainer(project: string, service: string): Promise<ContainerInspect> {
  const c = (await containersOf(project)).find((x) => x.Config?.Labels?.['com.docker.compose.service'] === service && x.State?.Running);
  if (!c) throw new Error(`no running ${service} container`);
  return c;
}

export async function volumesOf(project: string): Promise<string[]> {
  return (await docker(['volume', 'ls', '-q', '--filter', `label=com.docker.compose.project=${project}`])).out.split('\n').filter(Boolean).sort();
}

/** After a file: `down --volumes` (the documented purge) for each install, then whatever volume a failed case left. */
export async function purgeProjects(installs: Array<{ project: string; dir: string }>): Promise<void> {
  const found = await findCompose();
  if (found) {
    const [bin, ...prefix] = found.argv as [string, ...string[]];
    for (const { project, dir } of installs) {
      const file = join(installPaths(dir).docker, 'compose.yaml');
      // the runtime's own read time-out for Compose (compose.ts): at Compose's 60 s a loaded engine left containers behind
      const env = { COMPOSE_HTTP_TIMEOUT: process.env.COMPOSE_HTTP_TIMEOUT ?? String(COMPOSE_HTTP_TIMEOUT_S) };
      if (existsSync(file)) await execa(bin, [...prefix, '-p', project, '-f', file, 'down', '--volumes', '--remove-orphans'], { reject: false, timeout: 300_000, env });
    }
  }
  for (const { project } of installs) for (const v of await volumesOf(project)) await docker(['volume', 'rm', '-f', v], { allowFail: true });
}

/** The synthetic patients' identifiers in a record (src/fhir/generate/model.ts). */
export function syntheticIds(entries: Array<{ resource: { identifier?: Array<{ system?: string; value?: string }> } }>): Set<string> {
  const ids = new Set<string>();
  for (const e of entries) for (const i of e.resource.identifier ?? []) if (i.system === SYNTHETIC_ID_SYSTEM && i.value) ids.add(i.value);
  return ids;
}

/** A tier file's install: its directory, the platform stand-in's, the compose project, the CLI on it (see tierCli for `hostsFile`). */
export function tierSite(prefix: string, hostsFile?: string) {
  const dir = tempDir(`${prefix}-`);
  const platformDir = tempDir(`${prefix}-platform-`);
  const project = projectName(dir);
  const timings: Timings = {};
  return { dir, platformDir, project, platformName: `${project}-platform`, timings, cli: tierCli(dir, timings, hostsFile) };
}

/**
 * A site host name that is not loopback, on addresses the test makes: a Docker network with the
 * documentation range 198.51.100.0/24 (RFC 5737, which this machine does not use) gives the engine's host
 * the address 198.51.100.1 on a bridge of its own, with nothing attached to any real network. The name
 * resolves through a hosts file that only the CLI's own mount namespace sees (tierCli). The network
 * carries no container: it is there for its host address, as a hospital server's LAN address would be.
 */
export const SITE_HOST = Object.freeze({ name: 'hospital.test', address: '198.51.100.1', subnet: '198.51.100.0/24' });
const SITE_NETWORK = `hospital-api-tier-site${process.env.HOSPITAL_API_TIER_SUFFIX ? `-${process.env.HOSPITAL_API_TIER_SUFFIX}` : ''}`;

export function siteHostsFile(): string {
  const file = join(tempDir('site-hosts-'), 'hosts');
  writeFileSync(file, `127.0.0.1 localhost\n${SITE_HOST.address} ${SITE_HOST.name}\n`);
  return file;
}

/** The bridge of the site network, named so the LAN client can be plugged into it. */
const SITE_BRIDGE = 'hapi-site0';
/** A machine on the hospital's LAN: a network namespace of the test's own, 198.51.100.2 on the site bridge. */
export const SITE_LAN = Object.freeze({ netns: 'hospital-api-tier-lan', address: '198.51.100.2', hostVeth: 'hapi-lan-h', clientVeth: 'hapi-lan-c' });

async function ip(args: string[], allowFail = false): Promise<void> {
  const r = await execa('ip', args, { reject: false, stdin: 'ignore' });
  if (r.exitCode !== 0 && !allowFail) throw new Error(`ip ${args.join(' ')}: ${String(r.stderr).trim()}`);
}

/**
 * Makes the site address and a LAN client beside it (what an earlier, failed run left is replaced):
 * the site network's bridge gives the engine's host 198.51.100.1, and a network namespace plugged
 * into that bridge by a veth is a LAN machine at 198.51.100.2, from which the platform's requests
 * come (lanCurl). Nothing is routed anywhere else.
 */
export async function createSiteAddress(): Promise<void> {
  await removeSiteAddress();
  await docker(['network', 'create', '--label', 'hospital-api-tier=site', '-o', `com.docker.network.bridge.name=${SITE_BRIDGE}`, '--subnet', SITE_HOST.subnet, '--gateway', SITE_HOST.address, SITE_NETWORK]);
  await ip(['netns', 'add', SITE_LAN.netns]);
  await ip(['link', 'add', SITE_LAN.hostVeth, 'type', 'veth', 'peer', 'name', SITE_LAN.clientVeth]);
  await ip(['link', 'set', SITE_LAN.clientVeth, 'netns', SITE_LAN.netns]);
  await ip(['link', 'set', SITE_LAN.hostVeth, 'master', SITE_BRIDGE]);
  await ip(['link', 'set', SITE_LAN.hostVeth, 'up']);
  const inLan = (args: string[]) => execa('nsenter', [`--net=/run/netns/${SITE_LAN.netns}`, 'ip', ...args], { stdin: 'ignore' });
  await inLan(['addr', 'add', `${SITE_LAN.address}/24`, 'dev', SITE_LAN.clientVeth]);
  await inLan(['link', 'set', SITE_LAN.clientVeth, 'up']);
  await inLan(['link', 'set', 'lo', 'up']);
}

/** Removes the LAN client (its namespace takes the veth pair with it) and the site network. */
export async function removeSiteAddress(): Promise<void> {
  await ip(['netns', 'del', SITE_LAN.netns], true);
  await ip(['link', 'del', SITE_LAN.hostVeth], true);
  await docker(['network', 'rm', SITE_NETWORK], { allowFail: true });
}

/**
 * curl run on the LAN client, with the site's name resolved to its address as the LAN's DNS would
 * (`--resolve`). A request body (`data`) or one secret header line (`header`) goes to curl's stdin
 * (`--data-binary @-`, `-H @-`), so no token or key is in an argument list. Gives the body, the
 * status code and curl's exit code.
 */
export async function lanCurl(
  url: string,
  options: { port: number; args?: string[]; data?: string; header?: string; netns?: string },
): Promise<{ status: number; body: string; code: number }> {
  const stdin = options.data ?? options.header;
  const stdinFlag = options.data !== undefined ? ['--data-binary', '@-'] : options.header !== undefined ? ['-H', '@-'] : [];
  // another namespace (the swarm tier's bridge) reaches addresses, not the site's name
  const resolve = options.netns === undefined ? ['--resolve', `${SITE_HOST.name}:${options.port}:${SITE_HOST.address}`] : [];
  const r = await execa(
    'nsenter',
    [`--net=/run/netns/${options.netns ?? SITE_LAN.netns}`, 'curl', '-sS', '--max-time', '60', ...resolve,
      '-w', '\n%{http_code}', ...stdinFlag, ...(options.args ?? []), url],
    { reject: false, ...(stdin === undefined ? { stdin: 'ignore' as const } : { input: stdin }), maxBuffer: 256 * 1024 * 1024 },
  );
  const out = String(r.stdout);
  const nl = out.lastIndexOf('\n');
  return { status: Number(out.slice(nl + 1)) || 0, body: out.slice(0, Math.max(nl, 0)), code: r.exitCode ?? 1 };
}

/** A file's beforeAll: the images (timed), free ports for what the install publishes, the platform stand-in's tokens. */
export async function prepareTier(
  site: { platformDir: string; timings: Timings },
  careIds: string[],
): Promise<{ ports: Record<'api' | 'fhir' | 'gatewayHttps', number>; tokens: Array<{ careId: string; token: string }> }> {
  const t0 = Date.now();
  await prepareImages();
  site.timings.images = Date.now() - t0;
  // Distinct ports: three separate freePort calls may hand out the same port twice (CI saw api and gatewayHttps both on 35779).
  const [api, fhir, gatewayHttps] = (await freePorts(3)) as [number, number, number];
  const ports = { api, fhir, gatewayHttps };
  return { ports, tokens: writeTokens(site.platformDir, careIds) };
}

export type { RecordEntry } from '../helpers/patients.js';

/** Polls `probe` every 250 ms until it gives a value (null or a throw: not yet); fails after `ms`, naming `what` (test/helpers/until.ts). */
export async function until<T>(what: string, ms: number, probe: () => Promise<T | null>): Promise<T> {
  return (await untilHelper(probe, { what, timeoutMs: ms, intervalMs: 250, ok: (v) => v !== null })) as T;
}

/** `systemctl show` of a component's unit in a container whose PID 1 is systemd: MainPID, ActiveState, NRestarts, User, ExecStart. */
export async function unitShowIn(container: string, component: string): Promise<Record<string, string>> {
  const out = (await docker(['exec', container, 'systemctl', 'show', '-p', 'MainPID,ActiveState,NRestarts,User,ExecStart', `hospital-api-${component}.service`], { allowFail: true })).out;
  return Object.fromEntries(out.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

/**
 * Starts `image` as `name`, a container whose PID 1 is systemd, on the host's network (the tier's engine
 * has no bridge), and waits for systemd to reach its default target; says which units failed when it is
 * degraded. systemd needs CAP_SYS_ADMIN and the host's /sys/fs/cgroup (`--privileged` is refused here).
 */
export async function startSystemdHost(name: string, image: string, extraCaps: string[] = []): Promise<void> {
  await docker(['rm', '-f', name], { allowFail: true });
  await docker([
    'run', '-d', '--name', name, '--network', 'host', '--cap-add', 'SYS_ADMIN', ...extraCaps.flatMap((c) => ['--cap-add', c]),
    '-v', '/sys/fs/cgroup:/sys/fs/cgroup:rw', '--tmpfs', '/run', '--tmpfs', '/run/lock', '--tmpfs', '/tmp', image,
  ]);
  const state = await until(`systemd in ${name} reaching its default target`, 120_000, async () => {
    const s = (await docker(['exec', name, 'systemctl', 'is-system-running'], { allowFail: true })).out.trim();
    return s === 'running' || s === 'degraded' ? s : null;
  });
  if (state === 'degraded') {
    const failed = (await docker(['exec', name, 'systemctl', '--failed', '--no-legend', '--plain'], { allowFail: true })).out;
    process.stdout.write(`${name}: systemd degraded before the test (failed units: ${failed.trim().replace(/\n/g, '; ')})\n`);
  }
}

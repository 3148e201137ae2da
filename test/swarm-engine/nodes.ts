/**
 * The swarm tier's access to its three nodes: whether the tier can run here,
 * scripts/swarm-nodes.mjs (start, load, kill, stop, leftovers) and `docker`
 * against one node's socket. Nothing here fakes an answer.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { fileURLToPath } from 'node:url';

export const SWARM_SCRIPT = fileURLToPath(new URL('../../scripts/swarm-nodes.mjs', import.meta.url));
const RUN = process.env.HOSPITAL_API_SWARM_RUN || '/run/hospital-api-swarm-tier';
/** The docker tier's engine, where the images come from (as in scripts/swarm-nodes.mjs). */
const TIER_DOCKER_HOST = process.env.HOSPITAL_API_TIER_DOCKER_HOST || process.env.DOCKER_HOST || 'unix:///run/hospital-api-docker-tier/docker.sock';

export type NodeName = 'n1' | 'n2' | 'n3';
/** Must match NODES in scripts/swarm-nodes.mjs: n1 is the manager. */
export const NODES: readonly NodeName[] = ['n1', 'n2', 'n3'];
export const MANAGER: NodeName = 'n1';

/** Why the tier cannot run here, or null when it can. */
export async function swarmSkipReason(requiredImages: readonly string[]): Promise<string | null> {
  if (process.getuid?.() !== 0) return 'not root (network namespaces, cgroups and dockerd need it)';
  for (const bin of ['dockerd', 'docker', 'ip', 'nsenter', 'unshare']) {
    if ((await execa('sh', ['-c', `command -v ${bin}`], { reject: false, stdin: 'ignore' })).exitCode !== 0) return `no ${bin}`;
  }
  const tier = await execa('docker', ['info', '--format', '{{.ServerVersion}}'], { reject: false, timeout: 20_000, stdin: 'ignore', env: { DOCKER_HOST: TIER_DOCKER_HOST } });
  if (tier.exitCode !== 0) return `the docker tier's engine does not answer at ${TIER_DOCKER_HOST}`;
  for (const image of requiredImages) {
    const res = await execa('docker', ['image', 'inspect', image], { reject: false, stdin: 'ignore', env: { DOCKER_HOST: TIER_DOCKER_HOST } });
    if (res.exitCode !== 0) return `the docker tier's engine has no ${image} (node scripts/docker-engine.mjs images)`;
  }
  return null;
}

/** `docker` against the docker tier's engine, where the images are built. */
export async function onTierEngine(args: string[], options: { timeout?: number } = {}) {
  const res = await execa('docker', args, { reject: false, timeout: options.timeout ?? 600_000, stdin: 'ignore', env: { DOCKER_HOST: TIER_DOCKER_HOST } });
  if (res.exitCode !== 0) throw new Error(`docker ${args.slice(0, 3).join(' ')} on the tier engine: exit ${res.exitCode}: ${String(res.stderr).trim().slice(-1000)}`);
  return String(res.stdout);
}

/**
 * The swarm's names are fixed, so one file at a time may have it, and vitest runs files in parallel
 * (`npm test`): each file holds this lock from its beforeAll to its afterAll. A directory made
 * atomically (mkdir(2) fails when it exists) holding the holder's pid; a holder that died is replaced.
 */
const LOCK = `${RUN}.lock`;

export async function lockSwarm(timeoutMs = 3_600_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(`${LOCK}/pid`, String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = NaN;
    try {
      holder = Number(readFileSync(`${LOCK}/pid`, 'utf8'));
    } catch {
      // being written, or being released
    }
    if (Number.isInteger(holder) && holder > 0 && !alive(holder)) rmSync(LOCK, { recursive: true, force: true });
    if (Date.now() > deadline) throw new Error(`the swarm tier stayed locked by pid ${holder} (${LOCK})`);
    await sleep(1000);
  }
}

export function unlockSwarm(): void {
  try {
    if (Number(readFileSync(`${LOCK}/pid`, 'utf8')) === process.pid) rmSync(LOCK, { recursive: true, force: true });
  } catch {
    // not ours, or gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs the script; returns its stderr (the figures it prints), throws with its last words on failure. */
export async function swarmScript(args: string[], timeoutMs = 600_000): Promise<string> {
  const res = await execa('node', [SWARM_SCRIPT, ...args], { reject: false, stdin: 'ignore', timeout: timeoutMs });
  if (res.exitCode !== 0) throw new Error(`swarm-nodes.mjs ${args.join(' ')}: exit ${res.exitCode}: ${String(res.stdout).trim()} ${String(res.stderr).trim().slice(-2000)}`);
  return String(res.stderr);
}

/** What start made that is still there (namespaces, mounts, cgroups, processes), one line each. */
export async function swarmLeftovers(): Promise<string[]> {
  const res = await execa('node', [SWARM_SCRIPT, 'leftovers'], { reject: false, stdin: 'ignore' });
  return String(res.stdout).split('\n').filter(Boolean);
}

export function nodeSocket(node: NodeName): string {
  return `${RUN}/${node}/docker.sock`;
}

/**
 * `docker` against one node. DOCKER_API_VERSION: the CLI here is newer than the
 * nodes' 20.10 daemons and hides flags of a newer API it has not negotiated yet
 * (`--replicas-max-per-node` was "unknown flag" without it); 1.41 is 20.10's API.
 */
export async function onNode(node: NodeName, args: string[], options: { allowFail?: boolean; timeout?: number } = {}) {
  const res = await execa('docker', args, {
    reject: false,
    timeout: options.timeout ?? 120_000,
    stdin: 'ignore',
    env: { DOCKER_HOST: `unix://${nodeSocket(node)}`, DOCKER_API_VERSION: '1.41' },
  });
  if (res.exitCode !== 0 && !options.allowFail) throw new Error(`docker ${args.slice(0, 3).join(' ')} on ${node}: exit ${res.exitCode}: ${String(res.stderr).trim()}`);
  return { code: res.exitCode ?? 1, out: String(res.stdout), err: String(res.stderr) };
}

/** `docker node ls` on the manager: host name → status ("Ready", "Down"). */
export async function nodeStatus(): Promise<Record<string, string>> {
  const { out } = await onNode(MANAGER, ['node', 'ls', '--format', '{{.Hostname}} {{.Status}}']);
  return Object.fromEntries(out.split('\n').filter(Boolean).map((l) => l.split(' ') as [string, string]));
}

/** The running tasks of a service: node host name and current state, from the manager. */
export async function runningTasks(service: string): Promise<{ node: string; state: string }[]> {
  const { out } = await onNode(MANAGER, ['service', 'ps', service, '--filter', 'desired-state=running', '--format', '{{.Node}}\t{{.CurrentState}}']);
  return out.split('\n').filter(Boolean).map((l) => {
    const [node = '', state = ''] = l.split('\t');
    return { node, state };
  });
}

/** Seconds since t0 (ms), one decimal, for printed figures. */
export function secondsSince(t0: number): string {
  return ((Date.now() - t0) / 1000).toFixed(1);
}

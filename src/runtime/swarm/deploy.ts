/**
 * Deploying the stack from this host, a manager of the swarm (`docker stack
 * deploy` is a manager's command): the nodes' placement labels, the secrets'
 * files, the stack file for one phase, and the waits. Through the docker CLI
 * with argv only (docker/compose.ts dockerCli); no secret is ever an argument
 * or an environment variable: `docker stack deploy` reads each secret from its
 * file under <dir>/swarm/secrets/ (0600) and creates it in the swarm.
 *
 * The order of a start (up):
 * 1. the stack with Kong's migrations at one task (a new run each time) and Kong's
 *    proxies and kong-admin as they are now (none on a first deploy): the databases,
 *    HAPI, the FHIR door and ops start meanwhile;
 * 2. once that task is Complete, the stack as install.json asks (the migrations at 0): only the
 *    services that differ from step 1's file, so a service rolling since step 1 is not updated
 *    again mid-roll (stack-changes.ts);
 * 3. every long-running service at its desired count of running tasks.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { HospitalApiError } from '../../errors/index.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { writeIfChanged } from '../../install-dir/write-if-changed.js';
import type { ComponentState } from '../types.js';
import type { DockerCli } from '../container/compose.js';
import { databaseOf } from './databases.js';
import { renderStack, stackFile, type StackInputs, type StackService } from './render.js';
import { SECRET_KEYS, secretName, secretPayloads } from './secrets.js';
import { stackChanges } from './stack-changes.js';
import { desiredReplicas, oneShotOutcome, rolloutOf, stackServiceOf, type NodeInspect, type ServiceInspect, type TaskInspect } from './state.js';

/** The node labels templates/stack.yaml places services by. */
export const NODE_LABELS = Object.freeze({ admin: 'hospital-api.admin', kong: 'hospital-api.kong-database', fhir: 'hospital-api.fhir-database' });

export interface SwarmContext {
  dir: string;
  config: InstallConfig;
  stack: string;
  cli: DockerCli;
  progress: (line: string) => void;
  waitTimeoutMs: number;
  pollMs: number;
}

function lines(text: string): string[] {
  return text.split('\n').map((s) => s.trim()).filter(Boolean);
}

async function inspect<T>(cli: DockerCli, args: string[], ids: string[]): Promise<T[]> {
  if (ids.length === 0) return [];
  return JSON.parse((await cli.run([...args, ...ids])).stdout) as T[];
}

/** This engine's node ID; refuses when it is not a manager of an active swarm. */
export async function selfNode(cli: DockerCli): Promise<string> {
  const info = (await cli.run(['info', '--format', '{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.NodeID}}'])).stdout.trim().split(' ');
  if (info[0] !== 'active' || info[1] !== 'true' || !info[2]) {
    throw new HospitalApiError('ERR_INSTALL_DOCKER', { command: 'stack deploy', detail: 'this Docker engine is not a manager of an active swarm (`docker info`: Swarm); run hospital-api on a manager node' });
  }
  return info[2];
}

export async function swarmNodes(cli: DockerCli): Promise<NodeInspect[]> {
  return inspect<NodeInspect>(cli, ['node', 'inspect'], lines((await cli.run(['node', 'ls', '-q'])).stdout));
}

export async function stackServices(cli: DockerCli, stack: string): Promise<ServiceInspect[]> {
  const ids = lines((await cli.run(['service', 'ls', '-q', '--filter', `label=com.docker.stack.namespace=${stack}`])).stdout);
  return (await inspect<ServiceInspect>(cli, ['service', 'inspect'], ids)).filter((s) => s.Spec.Labels?.['com.docker.stack.namespace'] === stack);
}

/**
 * Every task of the services, their history included (DesiredState tells the current ones). Swarm
 * prunes old tasks all the time (its task history limit), so a task listed a moment ago can be gone
 * when it is inspected: `docker inspect` then prints the others and fails for that one, which is
 * left out. Any other failure is an error.
 */
export async function serviceTasks(cli: DockerCli, services: ServiceInspect[]): Promise<TaskInspect[]> {
  if (services.length === 0) return [];
  const ids = [...new Set(lines((await cli.run(['service', 'ps', '-q', '--no-trunc', ...services.map((s) => s.ID)])).stdout))];
  if (ids.length === 0) return [];
  const res = await cli.run(['inspect', '--type', 'task', ...ids], { allowFail: true });
  const vanished = lines(res.stderr).every((l) => /not found|no such/i.test(l));
  if (res.exitCode !== 0 && !vanished) throw new HospitalApiError('ERR_INSTALL_DOCKER', { command: 'inspect task', detail: lines(res.stderr).slice(-3).join(' ') || `exit code ${res.exitCode}` });
  return res.stdout.trim() ? (JSON.parse(res.stdout) as TaskInspect[]) : [];
}

/**
 * The container of a running task of one of the stack's services on this node's engine (kong-admin,
 * ops: both placed on this node), or null. `docker exec` reaches only this engine's containers.
 */
export async function runningTaskHere(cli: DockerCli, stack: string, service: StackService): Promise<string | null> {
  const ids = lines((await cli.run(['ps', '-q', '--filter', `label=com.docker.swarm.service.name=${stack}_${service}`, '--filter', 'status=running'])).stdout);
  return ids[0] ?? null;
}

/** Nodes a published-port task may run on: ready and active (`docker node ls`). */
export function eligibleNodes(nodes: NodeInspect[]): NodeInspect[] {
  return nodes.filter((n) => n.Status?.State === 'ready' && (n.Spec?.Availability ?? 'active') === 'active');
}

function hostname(n: NodeInspect): string {
  return n.Description?.Hostname ?? n.ID;
}

/**
 * The nodes carrying each placement label after this start: kong-admin, ops and the FHIR door
 * go to this node (the manager install runs on: its engine is the one `docker exec` reaches,
 * so admin calls never leave it), and the label moves here with them. A database's label is put on
 * the node install was told (--kong-database-node), else stays where it is, else comes here; it
 * never moves from a node that has it, because the database's volume is local to that node.
 */
export function labelPlan(config: InstallConfig, nodes: NodeInspect[], self: string): { add: Array<[string, string]>; remove: Array<[string, string]> } {
  const add: Array<[string, string]> = [];
  const remove: Array<[string, string]> = [];
  const holders = (label: string) => nodes.filter((n) => n.Spec?.Labels?.[label] === 'true');
  for (const n of holders(NODE_LABELS.admin)) if (n.ID !== self) remove.push([n.ID, NODE_LABELS.admin]);
  if (!holders(NODE_LABELS.admin).some((n) => n.ID === self)) add.push([self, NODE_LABELS.admin]);
  for (const which of ['kong', 'fhir'] as const) {
    const db = databaseOf(config, which);
    if (!('node' in db)) continue;
    const label = NODE_LABELS[which];
    const flag = `--${which}-database-node`;
    const has = holders(label);
    let target: NodeInspect | undefined;
    if (db.node !== null) {
      target = nodes.find((n) => n.ID === db.node || hostname(n) === db.node);
      if (!target) throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: flag, detail: `no node of this swarm is named "${db.node}" (\`docker node ls\`)` });
    } else {
      target = has[0] ?? nodes.find((n) => n.ID === self);
    }
    const elsewhere = has.filter((n) => n.ID !== target!.ID);
    if (elsewhere.length) {
      throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', {
        name: flag,
        detail: `the ${which === 'kong' ? 'Kong' : 'FHIR'} database runs on ${elsewhere.map(hostname).join(', ')} (label ${label}), and its data is in a volume of that node: move the data first, then the label (\`docker node update --label-rm ${label}\`)`,
      });
    }
    if (!has.some((n) => n.ID === target!.ID)) add.push([target!.ID, label]);
  }
  return { add, remove };
}

export async function placeLabels(ctx: SwarmContext, nodes: NodeInspect[], self: string): Promise<void> {
  const plan = labelPlan(ctx.config, nodes, self);
  for (const [node, label] of plan.remove) await ctx.cli.run(['node', 'update', '--label-rm', label, node]);
  for (const [node, label] of plan.add) {
    ctx.progress(`labelling node ${hostname(nodes.find((n) => n.ID === node)!)} ${label}=true`);
    await ctx.cli.run(['node', 'update', '--label-add', `${label}=true`, node]);
  }
}

/** What every deploy starts from: the swarm's nodes, with the placement labels put where this host's install needs them (labelPlan). */
export async function labelledNodes(ctx: SwarmContext): Promise<NodeInspect[]> {
  const self = await selfNode(ctx.cli);
  const nodes = await swarmNodes(ctx.cli);
  await placeLabels(ctx, nodes, self);
  return nodes;
}

/**
 * Writes the secrets' files and the stack file for this phase, then deploys it, and answers the file's
 * text. `--resolve-image never`: each node runs the image as named (a digest pins it: --kong-image
 * kong:3.9.3@sha256:…), so images loaded onto the nodes without a registry work too. `--prune`: a
 * service the file no longer has (a database moved outside the swarm) goes.
 *
 * `previous`, the file the phase before of the same start deployed (at `since`): then only the services
 * this phase changes are deployed, the others left rolling as they are, and a service this phase changes
 * that is still rolling from the phase before (a new image and a new replica count at once) finishes
 * that roll first (stack-changes.ts says why).
 */
export async function deploy(
  ctx: SwarmContext,
  inputs: Omit<StackInputs, 'payloads' | 'eligibleNodes'>,
  nodes: NodeInspect[],
  previous?: { text: string; since: string },
): Promise<string> {
  const payloads = secretPayloads(ctx.dir, ctx.config);
  const folder = join(ctx.dir, 'swarm', 'secrets');
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  for (const key of SECRET_KEYS) writeIfChanged(join(folder, key), payloads[key], true);
  const text = renderStack(ctx.dir, ctx.config, { payloads, eligibleNodes: eligibleNodes(nodes).length, ...inputs });
  writeIfChanged(stackFile(ctx.dir), text);
  if (previous === undefined) {
    await stackDeploy(ctx, stackFile(ctx.dir), true);
    return text;
  }
  const changes = stackChanges(previous.text, text);
  if (changes.services.length === 0) return text;
  await waitRolledOut(ctx, previous.since, changes.services);
  // beside stack.yaml: the secrets' `file: ./secrets/…` are read relative to the stack file
  const file = changesFile(ctx.dir);
  writeFileSync(file, changes.text, { mode: 0o600 });
  try {
    await stackDeploy(ctx, file, false);
  } finally {
    rmSync(file, { force: true });
  }
  return text;
}

/** The part of the stack file a later phase of a start deploys (deploy), there only while it is deployed. */
export function changesFile(dir: string): string {
  return join(dir, 'swarm', 'stack.changes.yaml');
}

async function stackDeploy(ctx: SwarmContext, file: string, prune: boolean): Promise<void> {
  await ctx.cli.run(['stack', 'deploy', '--compose-file', file, '--resolve-image', 'never', ...(prune ? ['--prune'] : []), '--with-registry-auth', ctx.stack], {
    timeoutMs: null,
    // a docker CLI from 26 on warns that it does not wait (docker/cli cli/command/stack/deploy.go); the
    // runtime waits itself, and 20.10's CLI has no --detach flag to say so
    onProgress: (line) => {
      if (!/--detach=false|In a future release, --detach/.test(line)) ctx.progress(line);
    },
  });
}

/**
 * Removes the stack's secrets that the deployed stack no longer names: each new content (a new key,
 * settings file, certificate) is a new secret, and the old one would stay in the swarm's store. A
 * secret a task still uses (one being replaced) is refused by the engine and left for the next time.
 */
export async function pruneSecrets(ctx: SwarmContext): Promise<void> {
  const payloads = secretPayloads(ctx.dir, ctx.config);
  const keep = new Set(SECRET_KEYS.map((key) => secretName(ctx.stack, key, payloads[key])));
  const names = lines((await ctx.cli.run(['secret', 'ls', '--filter', `label=com.docker.stack.namespace=${ctx.stack}`, '--format', '{{.Name}}'])).stdout);
  for (const name of names.filter((n) => !keep.has(n))) await ctx.cli.run(['secret', 'rm', name], { allowFail: true });
}

/** A new value for the migrations' HOSPITAL_API_RUN: a deploy with it starts a new task. */
export function newRun(): string {
  return `${new Date().toISOString().replace(/[-:.]/g, '')}-${randomBytes(3).toString('hex')}`;
}

/** Waits until the migrations task of `run` is Complete. @throws ERR_INSTALL_HEALTH_TIMEOUT with its last error */
export async function waitOneShot(ctx: SwarmContext, service: StackService, run: string): Promise<void> {
  let reported = 0;
  await waitFor(ctx, async () => {
    const s = (await stackServices(ctx.cli, ctx.stack)).find((x) => stackServiceOf(ctx.stack, x.Spec.Name) === service);
    const outcome = s ? oneShotOutcome(await serviceTasks(ctx.cli, [s]), s.ID, `HOSPITAL_API_RUN=${run}`) : { done: false, failures: 0, lastError: null };
    if (outcome.done) return null;
    if (outcome.failures > reported) {
      reported = outcome.failures;
      ctx.progress(`${service}: attempt ${outcome.failures} failed (${outcome.lastError}); Swarm tries again`);
    }
    return `${service} to complete${outcome.lastError ? ` (last attempt: ${outcome.lastError})` : ''}`;
  });
}

/**
 * Asks `step` every pollMs until it answers null (done). @throws ERR_INSTALL_HEALTH_TIMEOUT naming what `step`
 * last said it waits for, once waitTimeoutMs have gone by; `step` throws itself for what waiting cannot mend.
 */
async function waitFor(ctx: SwarmContext, step: () => Promise<string | null>): Promise<void> {
  const deadline = Date.now() + ctx.waitTimeoutMs;
  for (;;) {
    const waiting = await step();
    if (waiting === null) return;
    if (Date.now() > deadline) throw new HospitalApiError('ERR_INSTALL_HEALTH_TIMEOUT', { seconds: Math.round(ctx.waitTimeoutMs / 1000), what: waiting });
    await sleep(ctx.pollMs);
  }
}

/** Waits until every component named is up. @throws ERR_INSTALL_HEALTH_TIMEOUT naming those that are not */
export async function waitUp(ctx: SwarmContext, components: () => Promise<ComponentState[]>, names: readonly string[]): Promise<void> {
  await waitFor(ctx, async () => {
    const list = (await components()).filter((c) => names.includes(c.name));
    const waiting = list.filter((c) => c.state !== 'up');
    if (list.length === names.length && waiting.length === 0) return null;
    return waiting.map((c) => `${c.name} (${c.detail})`).join(', ') || names.join(', ');
  });
}

/** Waits until no service and no network of the stack is left (`docker stack rm` removes them in the background). */
export async function waitGone(ctx: SwarmContext): Promise<void> {
  await waitFor(ctx, async () => {
    const services = await stackServices(ctx.cli, ctx.stack);
    const networks = lines((await ctx.cli.run(['network', 'ls', '-q', '--filter', `label=com.docker.stack.namespace=${ctx.stack}`])).stdout);
    if (services.length === 0 && networks.length === 0) return null;
    return `stack ${ctx.stack} to be removed (${services.length} services, ${networks.length} networks left)`;
  });
}

/** Replicas of each of the stack's services as deployed now (absent: not deployed). */
export function deployedReplicas(stack: string, services: ServiceInspect[]): Partial<Record<StackService, number>> {
  const out: Partial<Record<StackService, number>> = {};
  for (const s of services) {
    const name = stackServiceOf(stack, s.Spec.Name);
    if (name) out[name] = desiredReplicas(s);
  }
  return out;
}

/**
 * Waits until the rolling updates a deploy started at `since` have finished (a new image, new
 * settings: Swarm replaces the tasks one at a time, update_config in templates/stack.yaml), so
 * the command returns once every task runs what was asked; `only`: those services of the stack alone. @throws ERR_INSTALL_DOCKER when Swarm
 * stopped an update or rolled it back; ERR_INSTALL_HEALTH_TIMEOUT naming those still rolling
 */
export async function waitRolledOut(ctx: SwarmContext, since: string, only?: readonly string[]): Promise<void> {
  let said = '';
  await waitFor(ctx, async () => {
    const all = await stackServices(ctx.cli, ctx.stack);
    const services = only ? all.filter((s) => only.includes(stackServiceOf(ctx.stack, s.Spec.Name) ?? '')) : all;
    const { where, failed } = rolloutOf(ctx.stack, services, await serviceTasks(ctx.cli, services), since);
    if (failed.length) {
      throw new HospitalApiError('ERR_INSTALL_DOCKER', {
        command: 'stack deploy',
        detail: failed.map((f) => `the update of ${f.service} ended ${f.state}${f.message ? ` (${f.message})` : ''}`).join('; ') + '; see `docker service ps` and `hospital-api logs`',
      });
    }
    if (where.length === 0) return null;
    const stand = `the rolling update of ${where.join(', ')}`;
    // each change of where it stands is a line of progress, so a slow roll shows what it waits for
    if (stand !== said) ctx.progress((said = stand));
    return stand;
  });
}

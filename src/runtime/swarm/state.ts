/**
 * Reading a deployed stack from the manager: `docker service inspect` of its
 * services, `docker inspect` of their tasks and `docker node inspect` of the
 * nodes, as the Engine API prints them (Docker Engine API v1.41, "Service",
 * "Task", "Node"). Pure functions: the runtime runs the commands.
 *
 * A task's state is Swarm's: `running` only once its container's healthcheck
 * has passed (moby daemon/cluster/executor/container/controller.go, Start waits
 * for the first `health_status: healthy` before it reports the task running),
 * and a container that turns unhealthy fails its task, which Swarm replaces.
 * So a service is Up when it has its desired number of running tasks.
 */
import type { ComponentState, ComponentVersion, GatewayNode } from '../types.js';
import { referenceVersion, splitReference } from '../container/image-reference.js';
import { ONE_SHOT_STACK_SERVICES, STACK_SERVICES, type StackService } from './render.js';

export interface ServiceInspect {
  ID: string;
  Spec: {
    Name: string;
    Labels?: Record<string, string>;
    TaskTemplate?: { ContainerSpec?: ContainerSpec };
    Mode?: { Replicated?: { Replicas?: number }; Global?: object };
    EndpointSpec?: { Mode?: string; Ports?: Array<{ TargetPort?: number; PublishedPort?: number; PublishMode?: string }> };
  };
  UpdateStatus?: { State?: string; Message?: string; StartedAt?: string; CompletedAt?: string };
  /** The service's virtual IP on each network (`10.0.1.2/24`): its name resolves there (issue 43). */
  Endpoint?: { VirtualIPs?: Array<{ NetworkID?: string; Addr?: string }> | null };
}

export interface TaskInspect {
  ID: string;
  ServiceID: string;
  NodeID?: string;
  Slot?: number;
  DesiredState?: string;
  CreatedAt?: string;
  Status?: {
    Timestamp?: string;
    State?: string;
    Message?: string;
    Err?: string;
    ContainerStatus?: { ContainerID?: string; ExitCode?: number };
  };
  Spec?: { ContainerSpec?: ContainerSpec };
  /** The task's addresses on each network (`10.0.1.7/24`, issue 43). */
  NetworksAttachments?: Array<{ Addresses?: string[] | null }> | null;
}

/** What of a service's container spec a deploy of this runtime changes (Engine API ContainerSpec). */
export interface ContainerSpec {
  Image?: string;
  Env?: string[];
  Args?: string[];
  Secrets?: Array<{ SecretName?: string }>;
}

export interface NodeInspect {
  ID: string;
  Spec?: { Labels?: Record<string, string>; Availability?: string; Role?: string };
  Description?: { Hostname?: string };
  Status?: { State?: string; Addr?: string };
  ManagerStatus?: { Addr?: string; Leader?: boolean };
}

/** `<stack>_<service>` → the template's service name, or null for a service of another stack. */
export function stackServiceOf(stack: string, fullName: string): StackService | null {
  const prefix = `${stack}_`;
  if (!fullName.startsWith(prefix)) return null;
  const name = fullName.slice(prefix.length);
  return (STACK_SERVICES as readonly string[]).includes(name) ? (name as StackService) : null;
}

/** Replicas a service asks for (a global service: one per eligible node, not counted here). */
export function desiredReplicas(s: ServiceInspect): number {
  return s.Spec.Mode?.Replicated?.Replicas ?? 0;
}

/** A node's address as the other nodes reach it: Status.Addr, else the manager's advertised address without its port. */
export function nodeAddress(n: NodeInspect): string | null {
  const addr = n.Status?.Addr;
  if (addr && addr !== '0.0.0.0') return addr;
  const manager = n.ManagerStatus?.Addr;
  return manager ? manager.slice(0, manager.lastIndexOf(':')) : null;
}

/** Tasks Swarm currently wants running: a replaced or removed task's DesiredState is `shutdown`. */
function current(tasks: TaskInspect[], serviceId: string): TaskInspect[] {
  return tasks.filter((t) => t.ServiceID === serviceId && t.DesiredState === 'running');
}

/** The first reason a task of the service is not running, from its state, message and error. */
function notRunningReason(tasks: TaskInspect[]): string | null {
  const t = tasks.find((x) => x.Status?.State !== 'running');
  if (!t) return null;
  const err = t.Status?.Err ? `: ${t.Status.Err}` : '';
  return `a task ${t.Status?.State ?? 'unknown'}${err}`;
}

const WAITING = new Set(['new', 'pending', 'assigned', 'accepted', 'preparing', 'ready', 'starting']);

/**
 * One component per long-running service of the stack (the one-shot migrations left out), in
 * name order: `up` with every desired task running, `starting` while a missing one is on its way,
 * else `down`. A service not deployed, or deployed with no replica (the API before its key), is down.
 */
export function componentsFromSwarm(
  stack: string,
  services: ServiceInspect[],
  tasks: TaskInspect[],
  nodes: NodeInspect[],
  expected: readonly StackService[],
  now = Date.now(),
): ComponentState[] {
  const hostOf = new Map(nodes.map((n) => [n.ID, n.Description?.Hostname ?? n.ID.slice(0, 12)]));
  const byName = new Map<StackService, ServiceInspect>();
  for (const s of services) {
    const name = stackServiceOf(stack, s.Spec.Name);
    if (name && !ONE_SHOT_STACK_SERVICES.includes(name)) byName.set(name, s);
  }
  const names = [...new Set([...expected.filter((n) => !ONE_SHOT_STACK_SERVICES.includes(n)), ...byName.keys()])].sort();
  return names.map((name): ComponentState => {
    const s = byName.get(name);
    if (!s) return { name, state: 'down', detail: 'not deployed' };
    const desired = desiredReplicas(s);
    const live = current(tasks, s.ID);
    const running = live.filter((t) => t.Status?.State === 'running');
    const [image, tag] = splitReference(s.Spec.TaskTemplate?.ContainerSpec?.Image ?? '');
    const ports = (s.Spec.EndpointSpec?.Ports ?? []).map((p) => p.PublishedPort).filter((p): p is number => typeof p === 'number');
    const where = [...new Set(running.map((t) => hostOf.get(t.NodeID ?? '') ?? '?'))].sort();
    const reason = notRunningReason(live);
    const detail = `${running.length}/${desired} tasks running${where.length ? ` on ${where.join(', ')}` : ''}${reason && running.length < desired ? `; ${reason}` : ''}`;
    const started = running.map((t) => Date.parse(t.Status?.Timestamp ?? '')).filter(Number.isFinite);
    let state: ComponentState['state'];
    if (desired > 0 && running.length >= desired) state = 'up';
    else if (desired > 0 && live.some((t) => WAITING.has(t.Status?.State ?? ''))) state = 'starting';
    else state = 'down';
    return {
      name,
      state,
      detail: desired === 0 ? 'no replica deployed' : detail,
      image,
      version: tag,
      ...(ports.length ? { ports } : {}),
      ...(started.length ? { uptimeSeconds: Math.max(0, Math.round((now - Math.max(...started)) / 1000)) } : {}),
    };
  });
}

/** Image, tag and the digest a service's spec is pinned to (none when it names a tag only), per long-running service. */
export function versionsFromSwarm(stack: string, services: ServiceInspect[]): ComponentVersion[] {
  return services
    .map((s) => ({ name: stackServiceOf(stack, s.Spec.Name), ref: s.Spec.TaskTemplate?.ContainerSpec?.Image ?? '' }))
    .filter((x): x is { name: StackService; ref: string } => x.name !== null && !ONE_SHOT_STACK_SERVICES.includes(x.name))
    .map(({ name, ref }) => referenceVersion(name, ref))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** What became of one run of a one-shot service: the task whose environment carries `marker`. */
export function oneShotOutcome(tasks: TaskInspect[], serviceId: string, marker: string): { done: boolean; failures: number; lastError: string | null } {
  const mine = tasks.filter((t) => t.ServiceID === serviceId && (t.Spec?.ContainerSpec?.Env ?? []).includes(marker));
  const failed = mine.filter((t) => ['failed', 'rejected'].includes(t.Status?.State ?? ''));
  const last = failed.sort((a, b) => (b.Status?.Timestamp ?? '').localeCompare(a.Status?.Timestamp ?? ''))[0];
  return {
    done: mine.some((t) => t.Status?.State === 'complete'),
    failures: failed.length,
    lastError: last ? (last.Status?.Err ?? last.Status?.Message ?? 'failed') : null,
  };
}

/** The nodes running a task of `service` now, with their addresses (null: none known, kept so a probe of it fails), by host name. */
export function nodesRunning(stack: string, service: StackService, services: ServiceInspect[], tasks: TaskInspect[], nodes: NodeInspect[]): GatewayNode[] {
  const s = services.find((x) => stackServiceOf(stack, x.Spec.Name) === service);
  if (!s) return [];
  const ids = new Set(current(tasks, s.ID).filter((t) => t.Status?.State === 'running').map((t) => t.NodeID));
  return nodes
    .filter((n) => ids.has(n.ID))
    .map((n): GatewayNode => ({ node: n.Description?.Hostname ?? n.ID, address: nodeAddress(n) }))
    .sort((a, b) => a.node.localeCompare(b.node));
}

/** The parts of a container spec a deploy changes: image, environment, arguments, secrets (each new content is a new secret name). */
function specPrint(c: ContainerSpec | undefined): string {
  return JSON.stringify([c?.Image ?? '', c?.Env ?? [], c?.Args ?? [], (c?.Secrets ?? []).map((x) => x.SecretName ?? '').sort()]);
}

/**
 * Where the rolling updates of a deploy stand. `rolling`: services with a task meant to run
 * (desired state running) on another spec than the service's now: Swarm is still replacing
 * them one at a time (update_config), or has not begun. Read from the tasks, not from the
 * service's UpdateStatus alone: every `docker stack deploy` updates every service, and an
 * update that changes nothing resets UpdateStatus to none (swarmkit
 * manager/controlapi/service.go UpdateService), hiding the roll an earlier phase started.
 * `failed`: services whose update, started at or after `since` (an ISO time of the manager's
 * clock, this host's: the CLI runs on a manager), Swarm paused or rolled back (Engine API
 * UpdateStatus.State, moby api/types/swarm/service.go: paused, rollback_paused,
 * rollback_completed; update_config failure_action: rollback).
 */
export function rolloutOf(
  stack: string,
  services: ServiceInspect[],
  tasks: TaskInspect[],
  since: string,
): { rolling: StackService[]; where: string[]; failed: Array<{ service: StackService; state: string; message: string }> } {
  const rolling: StackService[] = [];
  const where: string[] = [];
  const failed: Array<{ service: StackService; state: string; message: string }> = [];
  for (const s of services) {
    const name = stackServiceOf(stack, s.Spec.Name);
    if (!name) continue;
    const u = s.UpdateStatus;
    const thisDeploy = !!u?.State && !!u.StartedAt && Date.parse(u.StartedAt) >= Date.parse(since);
    if (thisDeploy && ['paused', 'rollback_paused', 'rollback_completed'].includes(u!.State!)) {
      failed.push({ service: name, state: u!.State!, message: u!.Message ?? '' });
      continue;
    }
    const want = specPrint(s.Spec.TaskTemplate?.ContainerSpec);
    const meant = current(tasks, s.ID);
    const stale = meant.some((t) => specPrint(t.Spec?.ContainerSpec) !== want);
    if (stale || (thisDeploy && (u!.State === 'updating' || u!.State === 'rollback_started'))) {
      rolling.push(name);
      where.push(`${name} (${rolloutStand(s, meant, want)})`);
    }
  }
  return { rolling, where, failed };
}

/**
 * Where one service's roll stands, for the operator who waits on it or whose wait timed out:
 * Swarm's update state, how many tasks meant to run are on the new spec and running, and the
 * first of them that is not running with Swarm's own words (a pending task says why no node
 * takes it: "no suitable node (host-mode port already in use on 2 nodes)", swarmkit
 * manager/scheduler/scheduler.go noSuitableNode).
 */
function rolloutStand(s: ServiceInspect, meant: TaskInspect[], want: string): string {
  const fresh = meant.filter((t) => specPrint(t.Spec?.ContainerSpec) === want);
  const parts = [
    ...(s.UpdateStatus?.State ? [`update ${s.UpdateStatus.State}${s.UpdateStatus.Message ? `: ${s.UpdateStatus.Message}` : ''}`] : []),
    `${fresh.filter((t) => t.Status?.State === 'running').length} of ${desiredReplicas(s)} on the new spec running, ${meant.length - fresh.length} on the old`,
  ];
  const stuck = fresh.find((t) => t.Status?.State !== 'running');
  if (stuck) {
    const state = stuck.Status?.State ?? 'unknown';
    // Swarm's message often repeats the state ("starting"): said only when it adds something
    const why = stuck.Status?.Err ?? (stuck.Status?.Message && stuck.Status.Message !== state ? stuck.Status.Message : '');
    parts.push(`a new task ${state}${why ? `: ${why}` : ''}`);
  }
  return parts.join('; ');
}

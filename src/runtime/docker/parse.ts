/**
 * Reading the compose project's state from `docker inspect`, which prints the
 * same JSON whichever Compose made the containers. (`docker compose ps --format
 * json` prints NDJSON from Compose 2.21, an array before (docker/compose#10918),
 * and Compose v1 has no --format at all: so status never parses it.)
 */
import type { ComponentState, ComponentVersion } from '../types.js';
import { splitReference } from '../container/image-reference.js';

/** Services that run once and exit (excluded from check 1, issue 5). */
export const ONE_SHOT_SERVICES: ReadonlySet<string> = new Set(['kong-migrations', 'kong-migrations-up', 'kong-migrations-finish']);

/** The long-running services of templates/compose.yaml: each must be listed, or it is down. */
export const LONG_RUNNING_SERVICES: readonly string[] = Object.freeze(['fhir-door', 'hapi', 'hapi-database', 'hapi-pidns', 'hapi-watchdog', 'hospital-api', 'kong', 'kong-database']);

/** The holder of the PID namespace hapi and hapi-watchdog join (templates/compose.yaml, "Hung components"). */
export const PIDNS_HOLDER = 'hapi-pidns';
export const PIDNS_JOINERS: readonly string[] = Object.freeze(['hapi', 'hapi-watchdog']);

export interface ContainerInspect {
  Id: string;
  Name?: string;
  Image: string;
  RestartCount?: number;
  State?: {
    Status?: string;
    Running?: boolean;
    Restarting?: boolean;
    ExitCode?: number;
    StartedAt?: string;
    /** The container's main process as the host sees it (0 when not running). */
    Pid?: number;
    Health?: { Status?: string } | null;
  };
  Config?: { Image?: string; Labels?: Record<string, string> };
  HostConfig?: { PidMode?: string; NetworkMode?: string };
  NetworkSettings?: {
    Ports?: Record<string, Array<{ HostIp?: string; HostPort?: string }> | null> | null;
    /** Per network the container is attached to: its addresses there (issue 43). */
    Networks?: Record<string, { IPAddress?: string; GlobalIPv6Address?: string } | null> | null;
  };
}

export interface ImageInspect {
  Id: string;
  RepoTags?: string[];
  RepoDigests?: string[];
}

export function serviceOf(c: ContainerInspect): string {
  return c.Config?.Labels?.['com.docker.compose.service'] ?? (c.Name ?? '').replace(/^\//, '');
}

function stateOf(c: ContainerInspect): ComponentState['state'] {
  const status = (c.State?.Status ?? '').toLowerCase();
  const health = (c.State?.Health?.Status ?? '').toLowerCase();
  if (status === 'running') {
    if (health === 'starting') return 'starting';
    if (health === 'unhealthy') return 'down';
    return 'up';
  }
  if (status === 'restarting') return 'restarting';
  if (status === 'exited' || status === 'dead') return 'exited';
  if (status === 'created') return 'starting';
  return 'down';
}

function detailOf(c: ContainerInspect): string {
  const status = c.State?.Status ?? 'unknown';
  const health = c.State?.Health?.Status;
  if (status === 'exited') return `exited (${c.State?.ExitCode ?? '?'})`;
  return health ? `${status} (${health})` : status;
}

/** Published host ports with their host address, e.g. "127.0.0.1:9000". */
export function publishedOf(c: ContainerInspect): string[] {
  const out: string[] = [];
  for (const bindings of Object.values(c.NetworkSettings?.Ports ?? {})) {
    for (const b of bindings ?? []) if (b.HostPort) out.push(`${b.HostIp || '0.0.0.0'}:${b.HostPort}`);
  }
  return [...new Set(out)].sort();
}

/** Long-running services only, Up meaning running and (where defined) healthy; missing ones are down. */
export function componentsFromInspect(containers: ContainerInspect[], expected: readonly string[] = LONG_RUNNING_SERVICES): ComponentState[] {
  const listed = containers.map(serviceOf);
  const missing: ComponentState[] = expected
    .filter((name) => !listed.includes(name))
    .map((name) => ({ name, state: 'down', detail: 'no container (not created)' }));
  return containers
    .filter((c) => !ONE_SHOT_SERVICES.has(serviceOf(c)))
    .map((c): ComponentState => {
      const ports = publishedOf(c).map((p) => Number(p.slice(p.lastIndexOf(':') + 1)));
      const started = c.State?.StartedAt ? Date.parse(c.State.StartedAt) : NaN;
      const [image, tag] = splitReference(c.Config?.Image ?? c.Image);
      return {
        name: serviceOf(c),
        state: stateOf(c),
        detail: detailOf(c),
        image,
        version: tag,
        ...(c.State?.Running && c.State.Pid ? { pid: c.State.Pid } : {}),
        ...(ports.length ? { ports: [...new Set(ports)] } : {}),
        ...(c.State?.Running && Number.isFinite(started) ? { uptimeSeconds: Math.max(0, Math.round((Date.now() - started) / 1000)) } : {}),
        ...(c.RestartCount !== undefined ? { restarts: c.RestartCount } : {}),
      };
    })
    .concat(missing)
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * The services that joined a PID namespace holder other than the current one.
 * Compose resolves `pid: "service:<name>"` to `container:<id>` when it creates
 * the container (HostConfig.PidMode), and docker-compose 1.29 does not recreate
 * the joining containers when the holder is recreated: they stay on the old id
 * (measured on the engine: "is up-to-date", then exited for good), and the
 * engine cannot start a container whose PID namespace container is gone or not
 * running. These are recreated after each `up`. An empty list while the holder
 * has no container (nothing to join yet).
 */
export function stalePidJoins(containers: ContainerInspect[], holder = PIDNS_HOLDER, joiners: readonly string[] = PIDNS_JOINERS): string[] {
  const own = containers.filter((c) => c.Config?.Labels?.['com.docker.compose.oneoff'] !== 'True');
  const h = own.find((c) => serviceOf(c) === holder);
  if (!h) return [];
  return [...new Set(own.filter((c) => joiners.includes(serviceOf(c)) && c.HostConfig?.PidMode !== `container:${h.Id}`).map(serviceOf))].sort();
}

/**
 * The same for a network namespace join (`network_mode: "service:kong"`, HostConfig.NetworkMode
 * `container:<id>`): the acceptance relay (acceptance.ts) on a kong container that was since
 * recreated sits in the old container's namespace, where no admin API listens. Recreated after each
 * `up` and kong restart, as the PID namespace joiners are.
 */
export function staleNetworkJoins(containers: ContainerInspect[], holder: string, joiners: readonly string[]): string[] {
  const own = containers.filter((c) => c.Config?.Labels?.['com.docker.compose.oneoff'] !== 'True');
  const h = own.find((c) => serviceOf(c) === holder);
  if (!h) return [];
  return [...new Set(own.filter((c) => joiners.includes(serviceOf(c)) && c.HostConfig?.NetworkMode !== `container:${h.Id}`).map(serviceOf))].sort();
}

/** Image, tag and digest of each running container, for the acceptance record. */
export function versionsFromInspect(containers: ContainerInspect[], images: ImageInspect[]): ComponentVersion[] {
  return containers
    .map((c) => {
      const ref = c.Config?.Image ?? c.Image;
      const [image, tag] = splitReference(ref);
      const img = images.find((i) => i.Id === c.Image);
      const pinned = ref.includes('@') ? ref : null;
      const digest = pinned ?? img?.RepoDigests?.find((d) => d.startsWith(`${image}@`)) ?? img?.RepoDigests?.[0] ?? null;
      return { name: serviceOf(c), version: tag, image, tag, digest: digest ? digest.slice(digest.indexOf('@') + 1) : null };
    })
    .filter((v) => !ONE_SHOT_SERVICES.has(v.name))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The container's addresses on every network it is attached to (issue 43). */
export function containerAddresses(c: ContainerInspect): string[] {
  const out: string[] = [];
  for (const n of Object.values(c.NetworkSettings?.Networks ?? {})) {
    for (const a of [n?.IPAddress, n?.GlobalIPv6Address]) if (a && !out.includes(a)) out.push(a);
  }
  return out;
}

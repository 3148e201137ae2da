/**
 * Parsing of `docker compose ps --format json` (Compose v2.21+ prints one JSON
 * object per line, older versions one array) and `docker inspect` output.
 */
import type { ComponentState, ComponentVersion } from '../types.js';

/** Services that run once and exit (excluded from check 1, issue 5). */
export const ONE_SHOT_SERVICES: ReadonlySet<string> = new Set(['kong-migrations']);

export interface PsEntry {
  ID?: string;
  Name?: string;
  Service?: string;
  State?: string;
  Health?: string;
  Status?: string;
  ExitCode?: number;
  Publishers?: Array<{ PublishedPort?: number; TargetPort?: number }> | null;
}

export function parsePsOutput(text: string): PsEntry[] {
  const trimmed = text.trim();
  if (!trimmed) return [];
  if (trimmed.startsWith('[')) return JSON.parse(trimmed) as PsEntry[];
  return trimmed
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as PsEntry);
}

function stateOf(e: PsEntry): ComponentState['state'] {
  const state = (e.State ?? '').toLowerCase();
  const health = (e.Health ?? '').toLowerCase();
  if (state === 'running') {
    if (health === 'starting') return 'starting';
    if (health === 'unhealthy') return 'down';
    return 'up';
  }
  if (state === 'restarting') return 'restarting';
  if (state === 'exited' || state === 'dead') return 'exited';
  if (state === 'created') return 'starting';
  return 'down';
}

/** The long-running services of templates/compose.yaml: each must be listed, or it is down. */
export const LONG_RUNNING_SERVICES: readonly string[] = Object.freeze(['hapi', 'hapi-database', 'hospital-api', 'kong', 'kong-database']);

/** Long-running services only, with Up meaning running and (where defined) healthy; missing ones are down. */
export function componentsFromPs(entries: PsEntry[], expected: readonly string[] = LONG_RUNNING_SERVICES): ComponentState[] {
  const listed = entries.map((e) => e.Service ?? '');
  const missing: ComponentState[] = expected
    .filter((name) => !listed.includes(name))
    .map((name) => ({ name, state: 'down', detail: 'no container (not created)' }));
  return entries
    .filter((e) => !ONE_SHOT_SERVICES.has(e.Service ?? ''))
    .map((e) => {
      const ports = (e.Publishers ?? []).map((p) => p.PublishedPort ?? 0).filter((p) => p > 0);
      return {
        name: e.Service ?? e.Name ?? 'unknown',
        state: stateOf(e),
        detail: e.Status ?? e.State ?? '',
        ...(ports.length ? { ports: [...new Set(ports)] } : {}),
      };
    })
    .concat(missing)
    .sort((a, b) => a.name.localeCompare(b.name));
}

export interface ContainerInspect {
  Id: string;
  Name?: string;
  Image: string;
  Config?: { Image?: string; Labels?: Record<string, string> };
}

export interface ImageInspect {
  Id: string;
  RepoTags?: string[];
  RepoDigests?: string[];
}

/** "repo:tag" → [repo, tag]; a registry port is not a tag. */
export function splitReference(ref: string): [string, string] {
  const at = ref.indexOf('@');
  const base = at >= 0 ? ref.slice(0, at) : ref;
  const colon = base.lastIndexOf(':');
  if (colon > base.lastIndexOf('/')) return [base.slice(0, colon), base.slice(colon + 1)];
  return [base, 'latest'];
}

/** Image, tag and digest of each running container, for the acceptance record. */
export function versionsFromInspect(containers: ContainerInspect[], images: ImageInspect[]): ComponentVersion[] {
  return containers
    .map((c) => {
      const ref = c.Config?.Image ?? c.Image;
      const [image, tag] = splitReference(ref);
      const img = images.find((i) => i.Id === c.Image);
      const digest = img?.RepoDigests?.find((d) => d.startsWith(`${image}@`)) ?? img?.RepoDigests?.[0] ?? null;
      const name = c.Config?.Labels?.['com.docker.compose.service'] ?? (c.Name ?? '').replace(/^\//, '');
      return { name, version: tag, image, tag, digest: digest ? digest.slice(digest.indexOf('@') + 1) : null };
    })
    .filter((v) => !ONE_SHOT_SERVICES.has(v.name))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Everything the gateway holds, read once per verify through the admin API:
 * services, routes, upstreams and their targets, plugins (every scope) and
 * consumers (issue 23). Credentials are never read. The drift, route and
 * inventory checks read it (facts.ts: once per run), and the record keeps its SHA-256.
 */
import { createHash } from 'node:crypto';
import type { Runtime } from '../runtime/types.js';

export type GatewayObject = Record<string, unknown> & { id: string };

export interface GatewaySnapshot {
  services: GatewayObject[];
  routes: GatewayObject[];
  upstreams: GatewayObject[];
  targets: GatewayObject[];
  plugins: GatewayObject[];
  consumers: GatewayObject[];
}

/** Kong's kong/api/endpoints.lua: lists page with `next`; follow it (bounded). */
export async function listAll(ctx: { runtime: Pick<Runtime, 'admin'> }, path: string): Promise<GatewayObject[]> {
  const out: GatewayObject[] = [];
  let next: string | null = `${path}?size=1000`;
  for (let i = 0; next && i < 50; i++) {
    const res = await ctx.runtime.admin('GET', next);
    if (res.status !== 200) throw new Error(`GET ${next} answered ${res.status}`);
    const body = res.body as { data?: GatewayObject[]; next?: string | null };
    out.push(...(body.data ?? []));
    next = body.next ?? null;
  }
  return out;
}

/** Reads everything the gateway holds (once per run: facts.ts). */
export async function readGatewaySnapshot(runtime: Pick<Runtime, 'admin'>): Promise<GatewaySnapshot> {
  const [services, routes, upstreams, plugins, consumers] = await Promise.all(
    ['/services', '/routes', '/upstreams', '/plugins', '/consumers'].map((p) => listAll({ runtime }, p)),
  );
  // Kong 3 has no flat /targets (kong/api/routes/targets.lua): per upstream
  const targets: GatewayObject[] = [];
  for (const u of upstreams!) targets.push(...(await listAll({ runtime }, `/upstreams/${encodeURIComponent(u.id)}/targets`)));
  return { services: services!, routes: routes!, upstreams: upstreams!, targets, plugins: plugins!, consumers: consumers! };
}


/** Fields that change on every install or hold ids: left out so two records of the same configuration hash alike. */
const VOLATILE = new Set(['id', 'created_at', 'updated_at']);
/** Config fields that can hold a secret (a plugin's password, token or client secret): the hash keeps only that they are set. */
const SECRET_FIELD = /(^|_)(password|passwd|secret|token|key)s?$/i;

function refName(ref: unknown, names: Map<string, string>): unknown {
  if (ref && typeof ref === 'object' && 'id' in ref) return names.get(String((ref as { id: unknown }).id)) ?? 'unknown';
  return ref ?? null;
}

function canonical(value: unknown, inConfig: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => canonical(v, inConfig));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = Object.create(null);
    for (const k of Object.keys(value).sort()) {
      if (k === '__proto__') continue;
      const v = (value as Record<string, unknown>)[k];
      out[k] = inConfig && SECRET_FIELD.test(k) && typeof v === 'string' ? '[secret]' : canonical(v, inConfig || k === 'config');
    }
    return out;
  }
  return value;
}

/**
 * The gateway's effective configuration without ids, timestamps and secrets:
 * references by id become the referenced object's name, each list is sorted,
 * objects' keys are sorted. Consumers' credentials are never read.
 */
export function effectiveConfig(s: GatewaySnapshot): Record<string, unknown[]> {
  const names = new Map<string, string>();
  for (const o of [...s.services, ...s.routes, ...s.upstreams]) names.set(o.id, String(o.name ?? o.id));
  for (const c of s.consumers) names.set(c.id, String(c.username ?? c.custom_id ?? c.id));
  const strip = (o: GatewayObject): unknown => {
    const kept: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      if (VOLATILE.has(k) || k === '__proto__') continue;
      kept[k] = ['service', 'route', 'consumer', 'upstream'].includes(k) ? refName(v, names) : v;
    }
    return canonical(kept, false);
  };
  const sorted = (list: GatewayObject[]): unknown[] => list.map(strip).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  return {
    services: sorted(s.services),
    routes: sorted(s.routes),
    upstreams: sorted(s.upstreams),
    targets: sorted(s.targets),
    plugins: sorted(s.plugins),
    consumers: sorted(s.consumers),
  };
}

export function configSha256(s: GatewaySnapshot): string {
  return createHash('sha256').update(JSON.stringify(effectiveConfig(s))).digest('hex');
}

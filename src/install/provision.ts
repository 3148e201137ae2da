/**
 * Provisions the gateway through its admin API: the declared state of
 * src/runtime/gateway-declaration.ts, in the order the spec names (issue 5;
 * spec §2.3): service fhir-api + basic-auth + cors, route fhir-api-route,
 * service fhir-api-key-auth + key-auth, route fhir-api-key-auth-route. Services and routes are PUT by name (PUT is
 * an upsert: Kong's kong/api/endpoints.lua); plugins are found by (name, service), Kong's uniqueness key, and
 * PATCHed or POSTed. Each step reads first and writes only on a difference in any
 * declared field (and names the fields it put back), so a rerun changes nothing
 * on an intact gateway, repairs a drifted one, and completes a run that was
 * killed part-way.
 * It never creates a consumer (spec §5: the hospital does that).
 */
import { isDeepStrictEqual } from 'node:util';
import { HospitalApiError } from '../errors/index.js';
import type { InstallConfig } from '../install-dir/install-config.js';
import type { AdminResponse, Runtime } from '../runtime/types.js';
import { declaredGateway, fhirUpstream, serviceFields, type DeclaredPlugin, type DeclaredRoute } from '../runtime/gateway-declaration.js';

export type Admin = Runtime['admin'];
export type Change = 'created' | 'updated' | 'unchanged';
export interface ProvisionStep {
  kind: 'service' | 'route' | 'plugin';
  name: string;
  change: Change;
  /** For `updated`: the fields that differed from the declaration and were put back. */
  fields?: string[];
}

type Entity = Record<string, unknown> & { id: string };

function message(body: unknown): string {
  if (body && typeof body === 'object' && 'message' in body) return String((body as { message: unknown }).message);
  return typeof body === 'string' ? body.slice(0, 200) : JSON.stringify(body)?.slice(0, 200) ?? '';
}

/** One admin call; anything but the accepted statuses is a coded error. */
export async function adminCall(
  admin: Admin,
  method: Parameters<Admin>[0],
  path: string,
  body?: unknown,
  accept: number[] = [200, 201, 204],
): Promise<AdminResponse> {
  const res = await admin(method, path, body);
  if (!accept.includes(res.status)) {
    throw new HospitalApiError('ERR_INSTALL_ADMIN', { method, path, status: res.status, detail: message(res.body) });
  }
  return res;
}

async function get(admin: Admin, path: string): Promise<Entity | null> {
  const res = await adminCall(admin, 'GET', path, undefined, [200, 404]);
  return res.status === 404 ? null : (res.body as Entity);
}

/** The desired fields whose values differ from the entity's (fields we do not declare are left alone). */
function differing(entity: Record<string, unknown>, desired: Record<string, unknown>): string[] {
  return Object.entries(desired)
    .filter(([k, v]) => !isDeepStrictEqual(entity[k] ?? null, v))
    .map(([k]) => k);
}

async function upsertService(admin: Admin, name: string, upstream: string): Promise<[Entity, Change, string[]]> {
  const desired = serviceFields(upstream);
  const before = await get(admin, `/services/${name}`);
  const fields = before ? differing(before, desired) : [];
  if (before && fields.length === 0 && before.enabled !== false) return [before, 'unchanged', []];
  const res = await adminCall(admin, 'PUT', `/services/${name}`, { url: upstream, enabled: true });
  return [res.body as Entity, before ? 'updated' : 'created', before && before.enabled === false ? [...fields, 'enabled'] : fields];
}

async function upsertRoute(admin: Admin, route: DeclaredRoute, serviceId: string): Promise<[Change, string[]]> {
  // Credentials travel over HTTPS only (issue 12): Kong answers 426 on the plain HTTP port.
  const desired = { paths: route.paths, protocols: route.protocols, service: { id: serviceId } };
  const before = await get(admin, `/routes/${route.name}`);
  const fields = before ? differing(before, desired) : [];
  if (before && fields.length === 0) return ['unchanged', []];
  await adminCall(admin, 'PUT', `/routes/${route.name}`, desired);
  return [before ? 'updated' : 'created', fields];
}

/** Install's instance: scoped to the service alone (a route- or consumer-scoped one is another object). */
async function findPlugin(admin: Admin, serviceId: string, plugin: string): Promise<Entity | null> {
  const res = await adminCall(admin, 'GET', `/services/${serviceId}/plugins`);
  const list = ((res.body as { data?: Entity[] }).data ?? []) as Entity[];
  return list.find((p) => p.name === plugin && p.route == null && p.consumer == null) ?? null;
}

/** Every declared field, not only those a first run set: a drifted one is put back, a disabled plugin re-enabled (issue 23). */
async function putBack(admin: Admin, before: Entity, plugin: DeclaredPlugin): Promise<[Change, string[]]> {
  const fields = differing((before.config ?? {}) as Record<string, unknown>, plugin.config).map((f) => `config.${f}`);
  if (before.enabled === false) fields.push('enabled');
  if (fields.length === 0) return ['unchanged', []];
  await adminCall(admin, 'PATCH', `/plugins/${before.id}`, { config: plugin.config, enabled: true });
  return ['updated', fields];
}

async function upsertPlugin(admin: Admin, serviceId: string, plugin: DeclaredPlugin): Promise<[Change, string[]]> {
  const before = await findPlugin(admin, serviceId, plugin.name);
  if (before) return putBack(admin, before, plugin);
  // One instance per (name, service): Kong's plugins cache_key, kong/db/schema/entities/plugins.lua; a 409 means a concurrent run made it.
  const res = await adminCall(admin, 'POST', `/services/${serviceId}/plugins`, { name: plugin.name, config: plugin.config }, [201, 409]);
  return res.status === 409 ? upsertPlugin(admin, serviceId, plugin) : ['created', []];
}

export { fhirUpstream };

/** @throws ERR_INSTALL_ADMIN, ERR_INSTALL_ADMIN_UNREACHABLE */
export async function provisionGateway(
  admin: Admin,
  config: InstallConfig,
  onStep: (step: ProvisionStep) => void = () => {},
): Promise<ProvisionStep[]> {
  const steps: ProvisionStep[] = [];
  const record = (kind: ProvisionStep['kind'], name: string, [change, fields]: [Change, string[]]): void => {
    const step: ProvisionStep = { kind, name, change, ...(fields.length ? { fields } : {}) };
    steps.push(step);
    onStep(step);
  };
  const declared = declaredGateway(config);
  for (const service of declared.services) {
    const [entity, change, fields] = await upsertService(admin, service.name, service.url);
    record('service', service.name, [change, fields]);
    for (const plugin of service.plugins) record('plugin', `${service.name}/${plugin.name}`, await upsertPlugin(admin, entity.id, plugin));
    for (const route of service.routes) record('route', route.name, await upsertRoute(admin, route, entity.id));
  }
  for (const plugin of declared.globalPlugins) record('plugin', plugin.name, await upsertGlobalPlugin(admin, plugin));
  return steps;
}

async function upsertGlobalPlugin(admin: Admin, plugin: DeclaredPlugin): Promise<[Change, string[]]> {
  const res = await adminCall(admin, 'GET', '/plugins');
  const list = ((res.body as { data?: Entity[] }).data ?? []) as Entity[];
  const before = list.find((p) => p.name === plugin.name && p.service == null && p.route == null && p.consumer == null);
  if (before) return putBack(admin, before, plugin);
  await adminCall(admin, 'POST', '/plugins', { name: plugin.name, config: plugin.config }, [201]);
  return ['created', []];
}

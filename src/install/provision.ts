/**
 * Provisions the gateway through its admin API in the order the spec names
 * (issue 5; spec §2.3): service fhir-api + basic-auth + cors, route
 * fhir-api-route, service fhir-api-key-auth + key-auth, route
 * fhir-api-key-auth-route. Services and routes are PUT by name (PUT is
 * an upsert: Kong's kong/api/endpoints.lua); plugins are found by (name, service), Kong's uniqueness key, and
 * PATCHed or POSTed. Each step reads first and writes only on a difference, so a
 * rerun changes nothing and completes a run that was killed part-way.
 * It never creates a consumer (spec §5: the hospital does that).
 */
import { isDeepStrictEqual } from 'node:util';
import { HospitalApiError } from '../errors/index.js';
import type { InstallConfig } from '../install-dir/install-config.js';
import type { AdminResponse, Runtime } from '../runtime/types.js';
import { profileOf } from '../runtime/profiles.js';

export type Admin = Runtime['admin'];
export type Change = 'created' | 'updated' | 'unchanged';
export interface ProvisionStep {
  kind: 'service' | 'route' | 'plugin';
  name: string;
  change: Change;
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

/** True when every desired field equals the entity's (fields we do not set are left alone). */
function matches(entity: Record<string, unknown>, desired: Record<string, unknown>): boolean {
  return Object.entries(desired).every(([k, v]) => isDeepStrictEqual(entity[k], v));
}

function parseUpstream(url: string): Record<string, unknown> {
  const u = new URL(url);
  const protocol = u.protocol.replace(':', '');
  const port = u.port ? Number(u.port) : protocol === 'https' ? 443 : 80;
  return { protocol, host: u.hostname, port, path: u.pathname === '/' ? null : u.pathname };
}

async function upsertService(admin: Admin, name: string, upstream: string): Promise<[Entity, Change]> {
  const desired = parseUpstream(upstream);
  const before = await get(admin, `/services/${name}`);
  if (before && matches(before, desired)) return [before, 'unchanged'];
  const res = await adminCall(admin, 'PUT', `/services/${name}`, { url: upstream });
  return [res.body as Entity, before ? 'updated' : 'created'];
}

async function upsertRoute(admin: Admin, name: string, path: string, serviceId: string): Promise<Change> {
  // Credentials travel over HTTPS only (issue 12): Kong answers 426 on the plain HTTP port.
  const desired = { paths: [path], protocols: ['https'], service: { id: serviceId } };
  const before = await get(admin, `/routes/${name}`);
  if (before && matches(before, desired)) return 'unchanged';
  await adminCall(admin, 'PUT', `/routes/${name}`, desired);
  return before ? 'updated' : 'created';
}

async function findPlugin(admin: Admin, serviceId: string, plugin: string): Promise<Entity | null> {
  const res = await adminCall(admin, 'GET', `/services/${serviceId}/plugins`);
  const list = ((res.body as { data?: Entity[] }).data ?? []) as Entity[];
  return list.find((p) => p.name === plugin) ?? null;
}

async function upsertPlugin(
  admin: Admin,
  serviceId: string,
  plugin: string,
  config: Record<string, unknown>,
): Promise<Change> {
  const before = await findPlugin(admin, serviceId, plugin);
  if (before) {
    if (matches((before.config ?? {}) as Record<string, unknown>, config) && before.enabled !== false) return 'unchanged';
    await adminCall(admin, 'PATCH', `/plugins/${before.id}`, { config, enabled: true });
    return 'updated';
  }
  // One instance per (name, service): Kong's plugins cache_key, kong/db/schema/entities/plugins.lua; a 409 means a concurrent run made it.
  const res = await adminCall(admin, 'POST', `/services/${serviceId}/plugins`, { name: plugin, config }, [201, 409]);
  return res.status === 409 ? upsertPlugin(admin, serviceId, plugin, config) : 'created';
}

/** What the shipped dashboard reads (templates/monitoring/); per_consumer off: the consumer is in the API's own metrics. */
const PROMETHEUS_CONFIG = { per_consumer: false, status_code_metrics: true, latency_metrics: true, bandwidth_metrics: true, upstream_health_metrics: true };

/** A plugin on no service, route or consumer (global), found by name in GET /plugins. */
async function upsertGlobalPlugin(admin: Admin, plugin: string, config: Record<string, unknown>): Promise<Change> {
  const list = ((await adminCall(admin, 'GET', '/plugins')).body as { data?: Entity[] }).data ?? [];
  const before = list.find((p) => p.name === plugin && p.service === null && p.route === null && p.consumer === null);
  if (before) {
    if (before.enabled === true && matches((before.config ?? {}) as Record<string, unknown>, config)) return 'unchanged';
    await adminCall(admin, 'PATCH', `/plugins/${before.id}`, { config, enabled: true });
    return 'updated';
  }
  await adminCall(admin, 'POST', '/plugins', { name: plugin, config }, [201]);
  return 'created';
}

/** Where the gateway reaches the FHIR server (the runtime's profile: the compose service, or loopback). */
export function fhirUpstream(config: InstallConfig): string {
  return profileOf(config.runtime).fhirUpstream(config);
}

/** @throws ERR_INSTALL_ADMIN, ERR_INSTALL_ADMIN_UNREACHABLE */
export async function provisionGateway(
  admin: Admin,
  config: InstallConfig,
  onStep: (step: ProvisionStep) => void = () => {},
): Promise<ProvisionStep[]> {
  const steps: ProvisionStep[] = [];
  const record = (step: ProvisionStep): void => {
    steps.push(step);
    onStep(step);
  };
  const upstream = fhirUpstream(config);
  const [basic, basicChange] = await upsertService(admin, 'fhir-api', upstream);
  record({ kind: 'service', name: 'fhir-api', change: basicChange });
  record({ kind: 'plugin', name: 'fhir-api/basic-auth', change: await upsertPlugin(admin, basic.id, 'basic-auth', { hide_credentials: true }) });
  const cors = { origins: config.cors.origins, headers: config.cors.headers, exposed_headers: config.cors.exposedHeaders };
  record({ kind: 'plugin', name: 'fhir-api/cors', change: await upsertPlugin(admin, basic.id, 'cors', cors) });
  record({ kind: 'route', name: 'fhir-api-route', change: await upsertRoute(admin, 'fhir-api-route', '/fhir-api', basic.id) });
  const [keyed, keyedChange] = await upsertService(admin, 'fhir-api-key-auth', upstream);
  record({ kind: 'service', name: 'fhir-api-key-auth', change: keyedChange });
  // hide_credentials: the key never reaches the FHIR server (issue 5)
  const keyAuth = { key_names: ['apikey'], hide_credentials: true };
  record({ kind: 'plugin', name: 'fhir-api-key-auth/key-auth', change: await upsertPlugin(admin, keyed.id, 'key-auth', keyAuth) });
  record({
    kind: 'route',
    name: 'fhir-api-key-auth-route',
    change: await upsertRoute(admin, 'fhir-api-key-auth-route', '/fhir-api-key-auth', keyed.id),
  });
  // Issue 26: Kong's prometheus plugin, global, so Kong in docker and the native gateway expose the same families (status_listen /metrics).
  record({ kind: 'plugin', name: 'prometheus', change: await upsertGlobalPlugin(admin, 'prometheus', PROMETHEUS_CONFIG) });
  return steps;
}

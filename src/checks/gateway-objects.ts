/**
 * §4.5.3: through the admin API, the services and routes exist and the
 * plugins are attached: basic-auth and cors on fhir-api, key-auth on
 * fhir-api-key-auth (spec §2.3). Both routes take https only, so no key or
 * Basic credential is ever accepted over plain HTTP (the route's `protocols`,
 * Kong's kong/db/schema/entities/routes.lua; its default is http and https).
 */
import { listAll } from './gateway-snapshot.js';
import type { Check, CheckContext } from './types.js';

type Entity = { id: string; name?: string | null; service?: { id: string } | null; enabled?: boolean; protocols?: string[] | null };

/** Kong's default when a route names no protocols (kong/db/schema/entities/routes.lua). */
const KONG_DEFAULT_PROTOCOLS = ['http', 'https'];

async function list(ctx: CheckContext, path: string): Promise<Entity[]> {
  return (await listAll(ctx, path)) as unknown as Entity[];
}

export const gatewayObjects: Check = {
  id: 'gateway-objects',
  spec: '4.5.3',
  title: 'Gateway services, routes and plugins are provisioned',
  mandatory: true,
  async run(ctx) {
    const [services, routes, plugins] = await Promise.all([list(ctx, '/services'), list(ctx, '/routes'), list(ctx, '/plugins')]);
    const problems: string[] = [];
    const service = (name: string): Entity | undefined => services.find((s) => s.name === name);
    for (const [svc, route] of [
      ['fhir-api', 'fhir-api-route'],
      ['fhir-api-key-auth', 'fhir-api-key-auth-route'],
    ] as const) {
      const s = service(svc);
      if (!s) problems.push(`service ${svc} missing`);
      const r = routes.find((x) => x.name === route);
      if (!r) problems.push(`route ${route} missing`);
      else if (s && r.service?.id !== s.id) problems.push(`route ${route} is not attached to ${svc}`);
      if (r) {
        const plain = (r.protocols ?? KONG_DEFAULT_PROTOCOLS).filter((p) => p !== 'https');
        if (plain.length) problems.push(`route ${route} also takes ${plain.join(', ')} (credentials must travel over https only)`);
      }
    }
    const attached = (svc: string, plugin: string): void => {
      const s = service(svc);
      if (!s) return;
      const found = plugins.filter((p) => p.name === plugin && p.service?.id === s.id);
      if (found.length === 0) problems.push(`${plugin} not attached to ${svc}`);
      // Kong Admin API, plugin object: one with enabled=false stays listed but does nothing.
      else if (!found.some((p) => p.enabled !== false)) problems.push(`${plugin} on ${svc} is disabled`);
    };
    attached('fhir-api', 'basic-auth');
    attached('fhir-api', 'cors');
    attached('fhir-api-key-auth', 'key-auth');
    const detail = `${services.length} services, ${routes.length} routes, ${plugins.length} plugins`;
    if (problems.length) {
      return { status: 'fail', summary: problems.join('; '), detail, httpStatus: 200, hint: 'Rerun `hospital-api install` (idempotent).' };
    }
    return { status: 'pass', summary: 'fhir-api (basic-auth, cors), fhir-api-key-auth (key-auth) and both routes', detail, httpStatus: 200 };
  },
};

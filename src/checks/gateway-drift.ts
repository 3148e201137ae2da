/**
 * Issue 23: no drift from what install declared. The gateway is compared with
 * the declaration install provisions (src/runtime/gateway-declaration.ts)
 * field by field, like decK's `diff` (github.com/Kong/deck, diff/diff.go):
 * each declared service's protocol, host, port and path; each declared
 * route's service, paths and protocols; each declared plugin's every config
 * field and `enabled`. Any difference fails, naming the field. Anywhere on
 * the gateway, cors may never combine a `*` origin with credentials (the CORS
 * protocol forbids it, fetch.spec.whatwg.org#cors-protocol-and-credentials;
 * Kong's cors handler would then echo any Origin with credentials allowed).
 */
import { isDeepStrictEqual } from 'node:util';
import { declaredGateway, serviceFields, type DeclaredPlugin } from '../runtime/gateway-declaration.js';
import type { GatewayObject } from './gateway-snapshot.js';
import type { Check } from './types.js';

function shown(v: unknown): string {
  const text = JSON.stringify(v ?? null);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function refId(v: unknown): string | null {
  return v && typeof v === 'object' && 'id' in v ? String((v as { id: unknown }).id) : null;
}

/** The declared plugin's differences from the instance found (`config.<field> is X, declared Y`). */
export function pluginDrift(found: GatewayObject | undefined, declared: DeclaredPlugin, where: string): string[] {
  if (!found) return [`plugin ${where}: missing`];
  const out: string[] = [];
  if (found.enabled === false) out.push(`plugin ${where}: enabled is false, declared true`);
  const config = (found.config ?? {}) as Record<string, unknown>;
  for (const [field, value] of Object.entries(declared.config)) {
    if (!isDeepStrictEqual(config[field] ?? null, value)) out.push(`plugin ${where}: config.${field} is ${shown(config[field])}, declared ${shown(value)}`);
  }
  return out;
}

export const gatewayDrift: Check = {
  id: 'gateway-drift',
  spec: 'extra',
  title: 'The services, routes and plugins install made match its declaration, field by field',
  mandatory: true,
  async run(ctx) {
    const s = await ctx.facts.gatewaySnapshot();
    const declared = declaredGateway(ctx.config);
    const problems: string[] = [];
    let compared = 0;
    for (const d of declared.services) {
      const service = s.services.find((x) => x.name === d.name);
      if (!service) {
        problems.push(`service ${d.name}: missing`);
        continue;
      }
      compared++;
      for (const [field, value] of Object.entries(serviceFields(d.url))) {
        if (!isDeepStrictEqual(service[field] ?? null, value)) problems.push(`service ${d.name}: ${field} is ${shown(service[field])}, declared ${shown(value)}`);
      }
      if (service.enabled === false) problems.push(`service ${d.name}: enabled is false, declared true`);
      for (const p of d.plugins) {
        compared++;
        const found = s.plugins.find((x) => x.name === p.name && refId(x.service) === service.id && refId(x.route) === null && refId(x.consumer) === null);
        problems.push(...pluginDrift(found, p, `${d.name}/${p.name}`));
      }
      for (const r of d.routes) {
        const route = s.routes.find((x) => x.name === r.name);
        if (!route) {
          problems.push(`route ${r.name}: missing`);
          continue;
        }
        compared++;
        if (refId(route.service) !== service.id) problems.push(`route ${r.name}: service is not ${d.name}`);
        for (const field of ['paths', 'protocols'] as const) {
          if (!isDeepStrictEqual(route[field] ?? null, r[field])) problems.push(`route ${r.name}: ${field} is ${shown(route[field])}, declared ${shown(r[field])}`);
        }
      }
    }
    for (const p of declared.globalPlugins) {
      compared++;
      const found = s.plugins.find((x) => x.name === p.name && refId(x.service) === null && refId(x.route) === null && refId(x.consumer) === null);
      problems.push(...pluginDrift(found, p, `global/${p.name}`));
    }
    for (const p of s.plugins) {
      const c = (p.config ?? {}) as { origins?: unknown; credentials?: unknown };
      if (p.name === 'cors' && p.enabled !== false && c.credentials === true && Array.isArray(c.origins) && c.origins.includes('*')) {
        problems.push(`plugin cors ${p.id}: origin * with credentials true`);
      }
    }
    const detail = `${compared} declared objects compared`;
    if (problems.length) {
      return { status: 'fail', summary: problems.join('; '), detail, hint: 'Rerun `hospital-api install`: it puts every declared field back.' };
    }
    return { status: 'pass', summary: 'every declared service, route and plugin field as install set it', detail };
  },
};

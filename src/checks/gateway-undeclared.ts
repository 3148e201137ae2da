/**
 * Issue 23: everything else is in the record. Lists the gateway objects
 * install did not declare (src/runtime/gateway-declaration.ts): services,
 * routes, upstreams, targets, plugins of any scope, and consumers (install
 * never makes one; `consumer create` does). A route among them that reaches
 * the FHIR server fails fhir-routes-closed; the rest, consumers aside, are a
 * warning here. It also puts the SHA-256 of the gateway's effective
 * configuration (gateway-snapshot.ts) in the record.
 */
import { declaredGateway } from '../runtime/gateway-declaration.js';
import { configSha256, type GatewayObject } from './gateway-snapshot.js';
import type { Check, UndeclaredObject } from './types.js';

function refId(v: unknown): string | null {
  return v && typeof v === 'object' && 'id' in v ? String((v as { id: unknown }).id) : null;
}

export const gatewayUndeclared: Check = {
  id: 'gateway-undeclared',
  spec: 'extra',
  title: 'Gateway objects install did not make are listed (a warning; consumers are listed only)',
  mandatory: false,
  async run(ctx) {
    const s = await ctx.facts.gatewaySnapshot();
    const declared = declaredGateway(ctx.config);
    const name = (o: GatewayObject | undefined, fallback: string): string => (o ? String(o.name ?? o.username ?? o.id) : fallback);
    const serviceNames = new Set(declared.services.map((d) => d.name));
    const routeNames = new Set(declared.services.flatMap((d) => d.routes.map((r) => r.name)));
    const serviceId = new Map(s.services.map((x) => [x.id, x]));
    const declaredPlugin = (p: GatewayObject): boolean => {
      if (refId(p.route) !== null || refId(p.consumer) !== null) return false;
      const sid = refId(p.service);
      if (sid === null) return declared.globalPlugins.some((g) => g.name === p.name);
      const svc = declared.services.find((d) => d.name === serviceId.get(sid)?.name);
      return !!svc && svc.plugins.some((g) => g.name === p.name);
    };
    const out: UndeclaredObject[] = [];
    for (const x of s.services) if (!serviceNames.has(String(x.name))) out.push({ kind: 'service', name: name(x, x.id), detail: `${String(x.protocol)}://${String(x.host)}:${String(x.port)}${x.path ? String(x.path) : ''}` });
    for (const x of s.routes) {
      if (!routeNames.has(String(x.name))) out.push({ kind: 'route', name: name(x, x.id), detail: `service ${name(serviceId.get(refId(x.service) ?? ''), 'none')}, paths ${JSON.stringify(x.paths ?? null)}, protocols ${JSON.stringify(x.protocols ?? null)}` });
    }
    for (const x of s.upstreams) out.push({ kind: 'upstream', name: name(x, x.id), detail: '' });
    for (const x of s.targets) out.push({ kind: 'target', name: String(x.target), detail: `upstream ${name(s.upstreams.find((u) => u.id === refId(x.upstream)), 'unknown')}` });
    for (const p of s.plugins) {
      if (declaredPlugin(p)) continue;
      const scope = [
        refId(p.service) ? `service ${name(serviceId.get(refId(p.service)!), 'unknown')}` : null,
        refId(p.route) ? `route ${name(s.routes.find((r) => r.id === refId(p.route)), 'unknown')}` : null,
        refId(p.consumer) ? `consumer ${name(s.consumers.find((c) => c.id === refId(p.consumer)), 'unknown')}` : null,
      ].filter(Boolean);
      out.push({ kind: 'plugin', name: String(p.name), detail: `${scope.length ? scope.join(', ') : 'global'}${p.enabled === false ? ' (disabled)' : ''}` });
    }
    for (const c of s.consumers) out.push({ kind: 'consumer', name: name(c, c.id), detail: 'made by `consumer create`, not by install' });
    const findings = { gatewayUndeclared: out, gatewayConfigSha256: configSha256(s) };
    const warned = out.filter((o) => o.kind !== 'consumer');
    const detail = out.map((o) => `${o.kind} ${o.name}${o.detail ? `: ${o.detail}` : ''}`).join('\n');
    if (warned.length) {
      return {
        status: 'warn',
        summary: `${warned.length} objects install did not make: ${warned.map((o) => `${o.kind} ${o.name}`).join(', ')}`,
        detail,
        hint: 'Review them; a route among them that reaches the FHIR server fails fhir-routes-closed.',
        findings,
      };
    }
    return { status: 'pass', summary: `nothing but install's objects (consumers listed: ${out.length})`, detail, findings };
  },
};

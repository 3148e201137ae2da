/**
 * GatewayConfig → declarative document (kong.md §3, `_format_version: "3.0"`)
 * that validates against decK's schema (../shared/schemas/kong-declarative-config.json):
 * nulls and timestamps dropped (the schema has no nulls), routes nested under
 * their service, credentials under their consumer, plugins top-level with
 * id references. `_transform: false` because basic-auth passwords are
 * exported as stored hashes (docs/gateway-admin.md: scrypt hashes do not
 * verify on real Kong; Kong SHA-1 hashes imported earlier do).
 */
import type { GatewayConfig } from '../model/types.js';

type Entity = Record<string, unknown>;
const DROP = new Set(['created_at', 'updated_at']);

function clean(entity: object, omit: readonly string[] = []): Entity {
  const out: Entity = {};
  for (const [k, v] of Object.entries(entity)) {
    if (v === null || v === undefined || DROP.has(k) || omit.includes(k)) continue;
    out[k] = v;
  }
  return out;
}

const idOf = (ref: { id: string } | null): string | undefined => ref?.id;

export function exportDeclarative(config: Readonly<GatewayConfig>): Record<string, unknown> {
  const doc: Record<string, unknown> = { _format_version: '3.0', _transform: false };
  const byService = new Map<string, Entity[]>();
  const loose: Entity[] = [];
  for (const route of config.routes) {
    const out = clean(route, ['service']);
    const sid = idOf(route.service);
    if (sid === undefined) loose.push(out);
    else byService.set(sid, [...(byService.get(sid) ?? []), out]);
  }
  if (config.ca_certificates.length > 0) doc.ca_certificates = config.ca_certificates.map((c) => clean(c));
  if (config.services.length > 0) {
    doc.services = config.services.map((s) => {
      const out = clean(s);
      if (s.client_certificate) out.client_certificate = s.client_certificate.id;
      const routes = byService.get(s.id);
      if (routes) out.routes = routes;
      return out;
    });
  }
  if (loose.length > 0) doc.routes = loose;
  if (config.consumers.length > 0) {
    doc.consumers = config.consumers.map((c) => {
      const out = clean(c);
      const mine = <T extends { consumer: { id: string } }>(list: readonly T[]): Entity[] =>
        list.filter((x) => x.consumer.id === c.id).map((x) => clean(x, ['consumer']));
      const keys = mine(config.keyauth_credentials);
      const basics = mine(config.basicauth_credentials);
      const acls = mine(config.acls);
      if (keys.length > 0) out.keyauth_credentials = keys;
      if (basics.length > 0) out.basicauth_credentials = basics;
      if (acls.length > 0) out.acls = acls;
      return out;
    });
  }
  if (config.plugins.length > 0) {
    doc.plugins = config.plugins.map((p) => {
      const out = clean(p, ['service', 'route', 'consumer', 'config']);
      out.config = p.config;
      for (const f of ['service', 'route', 'consumer'] as const) {
        const id = idOf(p[f]);
        if (id !== undefined) out[f] = id;
      }
      return out;
    });
  }
  return doc;
}

/**
 * GatewayConfig → declarative document (`_format_version: "3.0"`, Kong's kong/db/declarative/export.lua)
 * that validates against decK's schema (test/fixtures/schemas/kong-declarative-config.json, with its source):
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

/** Drops nulls at every depth (decK's schema has no nulls; Kong fills the defaults back in). */
function dropNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, dropNulls(x)]));
}

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
  if (config.certificates.length > 0) {
    doc.certificates = config.certificates.map((c) => {
      const out = clean(c);
      const snis = config.snis.filter((s) => s.certificate.id === c.id).map((s) => clean(s, ['certificate']));
      if (snis.length > 0) out.snis = snis;
      return out;
    });
  }
  if (config.upstreams.length > 0) {
    doc.upstreams = config.upstreams.map((u) => {
      const out = clean(u, ['healthchecks']);
      out.healthchecks = dropNulls(u.healthchecks);
      if (u.client_certificate) out.client_certificate = { id: u.client_certificate.id };
      const targets = config.targets.filter((t) => t.upstream.id === u.id).map((t) => clean(t, ['upstream']));
      if (targets.length > 0) out.targets = targets;
      return out;
    });
  }
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
      const lists = {
        keyauth_credentials: mine(config.keyauth_credentials),
        basicauth_credentials: mine(config.basicauth_credentials),
        hmacauth_credentials: mine(config.hmacauth_credentials),
        jwt_secrets: mine(config.jwt_secrets),
        oauth2_credentials: mine(config.oauth2_credentials),
        acls: mine(config.acls),
      };
      for (const [name, list] of Object.entries(lists)) if (list.length > 0) out[name] = list;
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

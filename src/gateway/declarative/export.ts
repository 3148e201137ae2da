/**
 * GatewayConfig → declarative document (`_format_version: "3.0"`), in one of two forms:
 *
 * - `kong`: Kong's own export (kong/db/declarative/export.lua emits `_transform = false`
 *   and every column, a service's `enabled` included). `GET /config` serves this, as Kong's does.
 * - `deck` (what `hospital-api gateway export` writes by default): the same without
 *   `_transform` and without a service's `enabled`, because decK 1.4.0 (Debian's) refuses
 *   both: its schema (github.com/Kong/deck v1.4.0 file/schema.go, generated from
 *   file/types.go) has `additionalProperties: false` at the root (only `_format_version`,
 *   `_info`, `_plugin_configs`, `_workspace`) and on FService (no `enabled`). A disabled
 *   service cannot be written in this form (it would come back enabled), so it is refused
 *   (ERR_GATEWAY_EXPORT_DISABLED_SERVICE). Basic-auth passwords stay the stored hashes:
 *   our parser keeps its own scrypt form without `_transform: false` (parse.ts); Kong
 *   SHA-1 hashes need the `kong` form to survive a reload (kongHashedCredentials).
 *
 * Both validate against the current decK release's schema
 * (test/fixtures/schemas/kong-declarative-config.json, with its source): nulls and
 * timestamps dropped (the schema has no nulls), routes nested under their service,
 * credentials under their consumer, plugins top-level with id references.
 * Basic-auth passwords are exported as stored hashes (docs/gateway-admin.md: scrypt
 * hashes do not verify on real Kong; Kong SHA-1 hashes imported earlier do).
 */
import { HospitalApiError } from '../../errors/index.js';
import { isScryptPasswordHash } from '../model/password.js';
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

export type ExportFormat = 'deck' | 'kong';
export const EXPORT_FORMATS: readonly ExportFormat[] = ['deck', 'kong'];

/**
 * Basic-auth credentials (consumer username/credential username) holding a hash that
 * is not our scrypt form (Kong's SHA-1, imported with `_transform: false`): in the
 * `deck` form they are re-hashed when the file is loaded again, as Kong would.
 */
export function kongHashedCredentials(config: Readonly<GatewayConfig>): string[] {
  return config.basicauth_credentials
    .filter((c) => !isScryptPasswordHash(c.password))
    .map((c) => `${config.consumers.find((u) => u.id === c.consumer.id)?.username ?? c.consumer.id}/${c.username}`);
}

/** @throws HospitalApiError ERR_GATEWAY_EXPORT_DISABLED_SERVICE in the `deck` form when a service is disabled */
export function exportDeclarative(config: Readonly<GatewayConfig>, format: ExportFormat = 'kong'): Record<string, unknown> {
  const deck = format === 'deck';
  if (deck) {
    const disabled = config.services.filter((s) => s.enabled === false).map((s) => s.name ?? s.id);
    if (disabled.length > 0) throw new HospitalApiError('ERR_GATEWAY_EXPORT_DISABLED_SERVICE', { services: disabled.join(', ') });
  }
  const doc: Record<string, unknown> = deck ? { _format_version: '3.0' } : { _format_version: '3.0', _transform: false };
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
      // decK 1.4.0 has no `enabled` (every service here is enabled: checked above); Kong's default is true.
      const out = clean(s, deck ? ['enabled'] : []);
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

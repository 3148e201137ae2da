/**
 * A certificate's `snis` list (Kong's kong/db/dao/certificates.lua and
 * kong/api/routes/certificates.lua): `snis` on POST/PUT/PATCH
 * /certificates creates, replaces or (PUT without it) clears the certificate's
 * SNI entities; every certificate the admin API returns lists its SNI names,
 * sorted. Duplicates and names held by another certificate are schema
 * violations on `snis`, as in Kong.
 */
import { randomUUID } from 'node:crypto';
import { checkWildcardHost } from '../model/hostname.js';
import { schemaViolation } from '../model/kong-error.js';
import type { GatewayConfig, Sni } from '../model/types.js';
import type { RepoContext } from './kinds.js';

type Entity = Record<string, unknown>;

/** The names asked for, or undefined when `snis` was not sent (form input may send one string). */
function nameList(raw: unknown): string[] | undefined {
  if (raw === undefined) return undefined;
  if (raw === null) return [];
  if (typeof raw === 'string') return [raw];
  if (!Array.isArray(raw) || !raw.every((n) => typeof n === 'string')) throw schemaViolation({ snis: 'expected an array of strings' });
  return raw as string[];
}

export function certificateSnisAfterWrite(config: GatewayConfig, cert: Entity, rawInput: Entity, _ctx: RepoContext, mode: 'insert' | 'update' | 'upsert'): void {
  let names = nameList(rawInput.snis);
  if (names === undefined) {
    if (mode !== 'upsert') return;
    names = []; // Kong: PUT without snis leaves the certificate with none
  }
  const seen = new Set<string>();
  for (const name of names) {
    const msg = checkWildcardHost(name);
    if (msg) throw schemaViolation({ snis: msg });
    if (seen.has(name)) throw schemaViolation({ snis: `${name} is duplicated` });
    seen.add(name);
    const other = config.snis.find((s) => s.name === name && s.certificate.id !== cert.id);
    if (other) throw schemaViolation({ snis: `${name} already associated with existing certificate '${other.certificate.id}'` });
  }
  const kept = config.snis.filter((s) => s.certificate.id !== cert.id || seen.has(s.name));
  const have = new Set(kept.filter((s) => s.certificate.id === cert.id).map((s) => s.name));
  const now = Math.floor(Date.now() / 1000);
  for (const name of [...seen].sort()) {
    if (have.has(name)) continue;
    const sni: Sni = { id: randomUUID(), created_at: now, updated_at: now, name, certificate: { id: cert.id as string }, tags: null };
    kept.push(sni);
  }
  config.snis.splice(0, config.snis.length, ...kept);
}

/** The certificate with `snis`: its SNI names, sorted (Kong's select_with_name_list / page). */
export function certificateView(config: Readonly<GatewayConfig>, cert: Entity): Entity {
  const snis = config.snis.filter((s) => s.certificate.id === cert.id).map((s) => s.name).sort();
  return { ...cert, snis };
}

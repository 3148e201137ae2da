/**
 * `record diff A B` (issue 23): what changed between two acceptance records:
 * the result, the gateway configuration's SHA-256, each check's status, the
 * routes to the FHIR server and what they answered, the objects install did
 * not make, the components' versions and the gateway certificate. Content
 * only: `record verify` proves a record's signature; read-record.ts reads a
 * record file back and refuses one whose shape diff cannot read.
 */
import type { AcceptanceRecord } from './build.js';

export interface RecordDifference {
  /** What differs: `result`, `gatewayConfigSha256`, `check <id>`, `route <name>`, `undeclared <kind> <name>`, `version <component>`, `gatewayCertificate`. */
  what: string;
  /** The value in A and in B; null where the item is absent from that record. */
  a: string | null;
  b: string | null;
}

export interface RecordDiff {
  a: string;
  b: string;
  same: boolean;
  differences: RecordDifference[];
}

/** Items keyed by name in A and B; one difference per key whose value differs. */
function keyed(prefix: string, a: Map<string, string>, b: Map<string, string>): RecordDifference[] {
  const out: RecordDifference[] = [];
  for (const key of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const va = a.get(key) ?? null;
    const vb = b.get(key) ?? null;
    if (va !== vb) out.push({ what: `${prefix} ${key}`, a: va, b: vb });
  }
  return out;
}

function map<T>(list: T[] | undefined, key: (t: T) => string, value: (t: T) => string): Map<string, string> {
  return new Map((list ?? []).map((t) => [key(t), value(t)]));
}

export function diffRecords(a: AcceptanceRecord, b: AcceptanceRecord, names: { a: string; b: string } = { a: 'A', b: 'B' }): RecordDiff {
  const d: RecordDifference[] = [];
  const scalar = (what: string, va: string | null, vb: string | null): void => {
    if (va !== vb) d.push({ what, a: va, b: vb });
  };
  scalar('result', a.result, b.result);
  scalar('gatewayConfigSha256', a.gatewayConfigSha256 ?? null, b.gatewayConfigSha256 ?? null);
  scalar('toolkitVersion', a.toolkitVersion ?? null, b.toolkitVersion ?? null);
  scalar('runtime', a.runtime ?? null, b.runtime ?? null);
  scalar('gatewayCertificate', a.gateway?.certificate?.fingerprint256 ?? null, b.gateway?.certificate?.fingerprint256 ?? null);
  const check = (c: AcceptanceRecord['checks'][number]): string => `${c.status}: ${c.summary}`;
  d.push(...keyed('check', map(a.checks, (c) => c.id, check), map(b.checks, (c) => c.id, check)));
  type Route = AcceptanceRecord['gatewayRoutes'][number];
  const route = (r: Route): string => `${r.open ? 'OPEN' : 'closed'} (${r.service} → ${r.via}; ${r.guards.join(', ')}; ${r.protocols.join(',')})`;
  d.push(...keyed('route', map(a.gatewayRoutes, (r) => r.route, route), map(b.gatewayRoutes, (r) => r.route, route)));
  type Undeclared = AcceptanceRecord['gatewayUndeclared'][number];
  const uKey = (o: Undeclared): string => `${o.kind} ${o.name} ${o.detail}`;
  d.push(...keyed('undeclared', map(a.gatewayUndeclared, uKey, () => 'present'), map(b.gatewayUndeclared, uKey, () => 'present')));
  const version = (v: AcceptanceRecord['versions'][number]): string => `${v.version}${v.digest ? ` ${v.digest}` : ''}`;
  d.push(...keyed('version', map(a.versions, (v) => v.name, version), map(b.versions, (v) => v.name, version)));
  return { a: names.a, b: names.b, same: d.length === 0, differences: d };
}

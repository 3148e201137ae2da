/**
 * Writers: transaction Bundles of at most 100 entries and NDJSON (ids kept).
 * Shared resources (Practitioner, Organization, Location, Medication) are PUT
 * with their stable ids, so patients reference them literally (`Practitioner/id`):
 * a conditional reference would cost the server a search per occurrence.
 * Patient data is POST with urn:uuid fullUrls and ifNoneExist on an identifier
 * (http://hl7.org/fhir/R4/http.html#transaction). Either way a second load creates nothing.
 */
import { firstIdentifier, type Dataset, type Resource } from './model.js';

export const MAX_BUNDLE_ENTRIES = 100;

export interface BundleEntry {
  fullUrl: string;
  resource: Record<string, unknown>;
  request: { method: 'POST' | 'PUT'; url: string; ifNoneExist?: string };
}
export interface TransactionBundle {
  resourceType: 'Bundle';
  type: 'transaction';
  entry: BundleEntry[];
}

/** http://hl7.org/fhir/R4/search.html#escaping: escape `\ , | $` inside a token part, then percent-encode it. */
export function tokenPart(s: string): string {
  return encodeURIComponent(s.replace(/[\\,|$]/g, (c) => `\\${c}`));
}

export function identifierQuery(resource: Resource): string | undefined {
  const id = firstIdentifier(resource);
  if (!id?.value) return undefined;
  return `identifier=${tokenPart(id.system ?? '')}|${tokenPart(id.value)}`;
}

/** Rewrites every `reference` in a resource; `map` returns the new value or undefined to keep it. */
function rewrite(value: unknown, map: (r: string) => string | undefined): unknown {
  if (Array.isArray(value)) return value.map((v) => rewrite(v, map));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = k === 'reference' && typeof v === 'string' ? (map(v) ?? v) : rewrite(v, map);
  }
  return out;
}

function entry(resource: Resource, local: Set<string>): BundleEntry {
  const { id, ...body } = resource;
  const ifNoneExist = identifierQuery(resource);
  return {
    fullUrl: `urn:uuid:${id}`,
    // references inside the Bundle become urn:uuid; those to shared resources stay literal
    resource: rewrite(body, (r) => (local.has(r) ? `urn:uuid:${r.slice(r.indexOf('/') + 1)}` : undefined)) as Record<string, unknown>,
    request: { method: 'POST', url: resource.resourceType, ...(ifNoneExist ? { ifNoneExist } : {}) },
  };
}

function sharedEntry(resource: Resource): BundleEntry {
  return { fullUrl: `urn:uuid:${resource.id}`, resource: { ...resource }, request: { method: 'PUT', url: `${resource.resourceType}/${resource.id}` } };
}

const key = (r: Resource) => `${r.resourceType}/${r.id}`;

/** Shared resources first (their own Bundles), then each patient's groups packed with the Patient repeated. */
export function toTransactionBundles(dataset: Dataset): { shared: TransactionBundle[]; patients: TransactionBundle[] } {
  const shared: TransactionBundle[] = [];
  for (let i = 0; i < dataset.shared.length; i += MAX_BUNDLE_ENTRIES) {
    shared.push({ resourceType: 'Bundle', type: 'transaction', entry: dataset.shared.slice(i, i + MAX_BUNDLE_ENTRIES).map(sharedEntry) });
  }
  const patients: TransactionBundle[] = [];
  for (const p of dataset.patients) {
    let current: Resource[] = [p.patient];
    const flush = () => {
      const local = new Set(current.map(key));
      patients.push({ resourceType: 'Bundle', type: 'transaction', entry: current.map((r) => entry(r, local)) });
      current = [p.patient];
    };
    for (const g of p.groups) {
      if (current.length + g.resources.length > MAX_BUNDLE_ENTRIES) flush();
      current.push(...g.resources);
    }
    if (current.length > 1 || p.groups.length === 0) flush();
  }
  return { shared, patients };
}

/** NDJSON lines: shared resources, then each Patient followed by its resources. */
export function* toNdjsonLines(dataset: Dataset): Generator<string> {
  for (const r of dataset.shared) yield JSON.stringify(r);
  for (const p of dataset.patients) {
    yield JSON.stringify(p.patient);
    for (const g of p.groups) for (const r of g.resources) yield JSON.stringify(r);
  }
}

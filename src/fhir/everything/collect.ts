/**
 * The $everything worker, transport-free: one page of a patient's record.
 * Phase c: the Patient compartment (the Patient included) in the store's keyset
 * order, filtered by _type/_since in the store and by start/end here.
 * Phase r: every resource those reference that is not of a compartment type
 * (Practitioner, Organization, Location, Medication, Device …, and what they in
 * turn reference), sorted by `Type/id`. Compartment-type targets are never added
 * by reference: they are either in this patient's compartment (sent in phase c)
 * or belong to someone else. So the phases are disjoint and each resource is
 * sent once across all pages.
 */
import { compartmentParams } from '../store/compartment.js';
import type { FhirStore, Resource, ResourceRef } from '../store/types.js';
import { inCareWindow } from './care-date.js';
import type { Cursor } from './cursor.js';
import type { EverythingParams } from './params.js';

export interface EverythingPage {
  entries: Array<{ resource: Resource; mode: 'match' | 'include' }>;
  next: Cursor | null;
}

const STORE_MAX = 1000;
/** How far references are followed from the compartment (Location → Organization is 2). */
const REFERENCE_DEPTH = 3;

const keyOf = (r: Resource) => `${r.resourceType}/${r.id ?? ''}`;

function keep(resource: Resource, p: EverythingParams): boolean {
  return inCareWindow(resource as unknown as Record<string, unknown>, p.start, p.end);
}

function compartmentOptions(p: EverythingParams, afterKey: string | undefined, limit: number) {
  return {
    limit,
    ...(p.types ? { types: p.types } : {}),
    ...(p.sinceIso ? { sinceIso: p.sinceIso } : {}),
    ...(afterKey ? { afterKey } : {}),
  };
}

/** Every kept compartment resource (a full keyset walk). */
function wholeCompartment(store: FhirStore, patientId: string, p: EverythingParams): Resource[] {
  const out: Resource[] = [];
  let after: string | undefined;
  for (;;) {
    const page = store.compartmentPage(patientId, compartmentOptions(p, after, STORE_MAX));
    for (const r of page.resources) if (keep(r, p)) out.push(r);
    if (!page.nextKey) return out;
    after = page.nextKey;
  }
}

/** The referenced resources for phase r, sorted by `Type/id`, filtered by _type and _since. */
export function referencedResources(store: FhirStore, sources: Resource[], p: EverythingParams): Resource[] {
  const found = new Map<string, Resource>();
  let frontier = sources;
  for (let depth = 0; depth < REFERENCE_DEPTH && frontier.length > 0; depth++) {
    const wanted: ResourceRef[] = store
      .referencesFrom(frontier)
      .filter((ref) => compartmentParams(ref.type) === undefined && !found.has(`${ref.type}/${ref.id}`));
    if (wanted.length === 0) break;
    frontier = store.readMany(wanted);
    for (const r of frontier) found.set(keyOf(r), r);
  }
  const since = p.sinceIso;
  return [...found.entries()]
    .filter(([, r]) => !p.types || p.types.includes(r.resourceType))
    .filter(([, r]) => !since || (r.meta?.lastUpdated !== undefined && new Date(r.meta.lastUpdated).toISOString() > since))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, r]) => r);
}

export function everythingPage(store: FhirStore, patientId: string, p: EverythingParams, cursor: Cursor | undefined): EverythingPage {
  const entries: EverythingPage['entries'] = [];
  let phase = cursor?.phase ?? 'c';
  let key = cursor?.key ?? '';
  // When this page walks the whole compartment from its start, its resources feed phase r directly.
  const whole: Resource[] | undefined = phase === 'c' && !key ? [] : undefined;

  while (phase === 'c') {
    const room = p.count - entries.length;
    if (room === 0) break;
    // Never fetch more than fits, so the store's key is exactly where this page stops.
    const page = store.compartmentPage(patientId, compartmentOptions(p, key || undefined, Math.min(room, STORE_MAX)));
    for (const r of page.resources) {
      if (!keep(r, p)) continue;
      entries.push({ resource: r, mode: 'match' });
      whole?.push(r);
    }
    if (page.nextKey) key = page.nextKey;
    else {
      phase = 'r';
      key = '';
    }
  }
  if (phase === 'c') return { entries, next: { phase: 'c', key } };

  const referenced = referencedResources(store, whole ?? wholeCompartment(store, patientId, p), p);
  const rest = key ? referenced.filter((r) => keyOf(r) > key) : referenced;
  // Includes do not count toward _count (as in HAPI, hapifhir/hapi-fhir#674), but at most _count of them ride on one page.
  const room = p.count;
  const sent = rest.slice(0, room);
  for (const r of sent) entries.push({ resource: r, mode: 'include' });
  if (rest.length <= room) return { entries, next: null };
  const last = sent[sent.length - 1];
  return { entries, next: { phase: 'r', key: last ? keyOf(last) : key } };
}

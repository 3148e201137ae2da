/**
 * Patient/$everything over HTTP against the real server (CLI child, temp --data):
 * exact contents (the compartment plus what it references, nothing of another
 * patient), each resource once across pages at several _count, _type, _since,
 * start/end, next links through a public base, 404/410, POST Parameters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { fhirJson, startFhir, type RunningFhir } from '../helpers/fhir-server.js';

let fhir: RunningFhir;

const put = (resourceType: string, id: string, body: Record<string, unknown> = {}) => ({
  resource: { resourceType, id, ...body },
  request: { method: 'PUT', url: `${resourceType}/${id}` },
});
const ref = (reference: string) => ({ reference });
const EXTRA_OBS = 30;

const fixture = [
  put('Organization', 'org-1', { name: 'General Hospital' }),
  put('Organization', 'org-2', { name: 'Only used by patient B' }),
  put('Location', 'loc-1', { name: 'Ward A', managingOrganization: ref('Organization/org-1') }),
  put('Practitioner', 'pr-1'),
  put('Practitioner', 'pr-2'),
  put('Practitioner', 'pr-3'),
  put('Medication', 'med-1', { code: { text: 'metformin' } }),
  put('Patient', 'pa', { identifier: [{ system: 'urn:hospital-api:platform-care-id', value: 'A' }], managingOrganization: ref('Organization/org-1') }),
  put('Patient', 'pb', { identifier: [{ system: 'urn:hospital-api:platform-care-id', value: 'B' }], managingOrganization: ref('Organization/org-2') }),
  put('Encounter', 'enc-a', { status: 'finished', class: { code: 'AMB' }, subject: ref('Patient/pa'), period: { start: '2020-03-01T09:00:00Z', end: '2020-03-01T10:00:00Z' }, location: [{ location: ref('Location/loc-1') }], participant: [{ individual: ref('Practitioner/pr-1') }] }),
  put('Observation', 'obs-a1', { status: 'final', code: { text: 'hr' }, subject: ref('Patient/pa'), encounter: ref('Encounter/enc-a'), effectiveDateTime: '2020-03-01T09:30:00Z', performer: [ref('Practitioner/pr-1')] }),
  put('Observation', 'obs-a2', { status: 'final', code: { text: 'bp' }, subject: ref('Patient/pa'), effectiveDateTime: '2023-06-01', performer: [ref('Practitioner/pr-2')] }),
  put('Condition', 'cond-a', { code: { text: 'no care date' }, subject: ref('Patient/pa') }),
  put('MedicationRequest', 'mr-a', { status: 'active', intent: 'order', subject: ref('Patient/pa'), medicationReference: ref('Medication/med-1'), authoredOn: '2021-05-05' }),
  ...Array.from({ length: EXTRA_OBS }, (_, i) => put('Observation', `obs-x${i}`, { status: 'final', code: { text: 'lab' }, subject: ref('Patient/pa'), effectiveDateTime: `2019-01-${String(i + 1).padStart(2, '0')}` })),
  put('Encounter', 'enc-b', { status: 'finished', class: { code: 'AMB' }, subject: ref('Patient/pb'), participant: [{ individual: ref('Practitioner/pr-3') }] }),
  put('Observation', 'obs-b', { status: 'final', code: { text: 'hr' }, subject: ref('Patient/pb'), encounter: ref('Encounter/enc-b'), performer: [ref('Practitioner/pr-3')] }),
  put('Patient', 'pc'),
];

const COMPARTMENT_A = ['Patient/pa', 'Encounter/enc-a', 'Observation/obs-a1', 'Observation/obs-a2', 'Condition/cond-a', 'MedicationRequest/mr-a', ...Array.from({ length: EXTRA_OBS }, (_, i) => `Observation/obs-x${i}`)];
// loc-1 → org-1 is followed too; pr-3, org-2 and everything of B stay out.
const REFERENCED_A = ['Organization/org-1', 'Location/loc-1', 'Practitioner/pr-1', 'Practitioner/pr-2', 'Medication/med-1'];

const keyOf = (e: { resource: { resourceType: string; id: string } }) => `${e.resource.resourceType}/${e.resource.id}`;

/** Follows next links (re-based onto the real server) and returns every entry key, in order. */
async function everything(query: string, headers: Record<string, string> = {}, expectBase?: string): Promise<{ keys: string[]; pages: number; modes: Record<string, string> }> {
  let url: string | undefined = `${fhir.base}/Patient/pa/$everything${query}`;
  const keys: string[] = [];
  const modes: Record<string, string> = {};
  let pages = 0;
  while (url) {
    const { status, body } = await fhirJson(url, { headers });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.resourceType).toBe('Bundle');
    expect(body.type).toBe('searchset');
    pages++;
    for (const e of body.entry ?? []) {
      keys.push(keyOf(e));
      modes[keyOf(e)] = e.search?.mode;
      if (expectBase) expect(e.fullUrl).toBe(`${expectBase}/${keyOf(e)}`);
    }
    const self = body.link.find((l: { relation: string }) => l.relation === 'self');
    expect(self.url.startsWith(`${expectBase ?? fhir.base}/Patient/pa/$everything`)).toBe(true);
    const next = body.link.find((l: { relation: string }) => l.relation === 'next')?.url as string | undefined;
    if (next && expectBase) expect(next.startsWith(`${expectBase}/Patient/pa/$everything?`)).toBe(true);
    url = next && expectBase ? fhir.base + next.slice(expectBase.length) : next;
    expect(pages).toBeLessThan(500);
  }
  return { keys, pages, modes };
}

const sorted = (a: string[]) => [...a].sort();

beforeAll(async () => {
  fhir = await startFhir(tempDir('fhir-everything-'));
  const { status, body } = await fhirJson(fhir.base, { method: 'POST', body: { resourceType: 'Bundle', type: 'transaction', entry: fixture } });
  expect(status, JSON.stringify(body).slice(0, 500)).toBe(200);
  expect((await fhirJson(`${fhir.base}/Patient/pc`, { method: 'DELETE' })).status).toBeLessThan(300);
});

afterAll(async () => {
  await fhir?.stop();
  removeTempDirs();
});

describe('Patient/$everything over HTTP', () => {
  it('returns the compartment and every resource it references, nothing of the other patient', async () => {
    const { keys, modes } = await everything('');
    expect(sorted(keys)).toEqual(sorted([...COMPARTMENT_A, ...REFERENCED_A]));
    expect(new Set(keys).size).toBe(keys.length);
    for (const k of COMPARTMENT_A) expect(modes[k], k).toBe('match');
    for (const k of REFERENCED_A) expect(modes[k], k).toBe('include');
  });

  it.each([1, 3, 7, 36, 40, 41, 1000])('sends each resource exactly once across pages at _count=%i', async (count) => {
    const { keys, pages } = await everything(`?_count=${count}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(sorted(keys)).toEqual(sorted([...COMPARTMENT_A, ...REFERENCED_A]));
    // referenced resources ride on the last compartment page (up to _count of them), the rest follow
    const [c, r] = [COMPARTMENT_A.length, REFERENCED_A.length];
    expect(pages).toBe(Math.ceil(c / count) + Math.ceil(Math.max(0, r - count) / count));
  });

  it('filters by _type, including referenced types when named', async () => {
    const { keys } = await everything('?_type=Observation,Practitioner&_count=5');
    expect(sorted(keys)).toEqual(sorted([...COMPARTMENT_A.filter((k) => k.startsWith('Observation/')), 'Practitioner/pr-1', 'Practitioner/pr-2']));
    const only = await everything('?_type=Encounter');
    expect(only.keys).toEqual(['Encounter/enc-a']);
  });

  it('filters by care dates (start/end), keeping resources without one', async () => {
    const { keys } = await everything('?start=2021-01-01&end=2021-12-31');
    // Patient and Condition have no care date; mr-a is in 2021; what they reference follows
    expect(sorted(keys)).toEqual(sorted(['Patient/pa', 'Condition/cond-a', 'MedicationRequest/mr-a', 'Medication/med-1', 'Organization/org-1']));
    const from2020 = await everything('?start=2020-03-01&_type=Encounter,Observation');
    expect(sorted(from2020.keys)).toEqual(sorted(['Encounter/enc-a', 'Observation/obs-a1', 'Observation/obs-a2']));
  });

  it('returns only what changed after _since', async () => {
    const before = await fhirJson(`${fhir.base}/Patient/pa/$everything?_count=1`);
    const since = before.body.meta.lastUpdated as string;
    await new Promise((r) => setTimeout(r, 20));
    const obs = (await fhirJson(`${fhir.base}/Observation/obs-a2`)).body;
    expect((await fhirJson(`${fhir.base}/Observation/obs-a2`, { method: 'PUT', body: { ...obs, status: 'amended' } })).status).toBe(200);
    const { keys } = await everything(`?_since=${encodeURIComponent(since)}`);
    expect(keys).toEqual(['Observation/obs-a2']);
  });

  it('names the public base in fullUrls and next links (X-Forwarded-* from a loopback proxy)', async () => {
    // What our gateway sends (as Kong's kong/runloop/handler.lua): X-Forwarded-Host without the port, the port apart.
    const headers = { 'x-forwarded-host': 'gw.example', 'x-forwarded-port': '8443', 'x-forwarded-proto': 'https', 'x-forwarded-prefix': '/fhir-api' };
    const { keys, pages } = await everything('?_count=10', headers, 'https://gw.example:8443/fhir-api');
    expect(pages).toBe(4);
    expect(sorted(keys)).toEqual(sorted([...COMPARTMENT_A, ...REFERENCED_A]));
  });

  it('answers POST with a Parameters body', async () => {
    const { status, body } = await fhirJson(`${fhir.base}/Patient/pa/$everything`, {
      method: 'POST',
      body: { resourceType: 'Parameters', parameter: [{ name: '_type', valueCode: 'MedicationRequest,Medication' }] },
    });
    expect(status).toBe(200);
    expect(sorted(body.entry.map(keyOf))).toEqual(['Medication/med-1', 'MedicationRequest/mr-a']);
  });

  it('answers 404 for an unknown patient, 410 for a deleted one, 400 for bad parameters and cursors, with OperationOutcomes', async () => {
    const unknown = await fhirJson(`${fhir.base}/Patient/nobody/$everything`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.resourceType).toBe('OperationOutcome');
    const gone = await fhirJson(`${fhir.base}/Patient/pc/$everything`);
    expect(gone.status).toBe(410);
    expect(gone.body.resourceType).toBe('OperationOutcome');
    for (const q of ['_count=0', '_since=yesterday', 'start=2020-13', '_cursor=not-a-cursor']) {
      const bad = await fhirJson(`${fhir.base}/Patient/pa/$everything?${q}`);
      expect(bad.status, q).toBe(400);
      expect(bad.body.resourceType, q).toBe('OperationOutcome');
    }
    // a cursor from another query is refused, not misapplied
    const first = await fhirJson(`${fhir.base}/Patient/pa/$everything?_count=2`);
    const cursor = new URL(first.body.link.find((l: { relation: string }) => l.relation === 'next').url).searchParams.get('_cursor');
    expect((await fhirJson(`${fhir.base}/Patient/pa/$everything?_type=Observation&_cursor=${cursor}`)).status).toBe(400);
  });
});

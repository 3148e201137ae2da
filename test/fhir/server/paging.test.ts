import { beforeAll, describe, expect, it } from 'vitest';
import { allPages, call, ids, startServer, useFhirServer } from './helpers.js';

const fhir = useFhirServer({ publicBase: 'https://fhir.example.org/r4' });
const N = 53;
const obsIds: string[] = [];
let patientId: string;

beforeAll(async () => {
  patientId = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', name: [{ family: 'Pager' }] })).body.id;
  const entry = Array.from({ length: N }, (_, i) => ({
    resource: {
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
      subject: { reference: `Patient/${patientId}` },
      // dates deliberately out of insertion order, with ties
      effectiveDateTime: `2020-01-${String(1 + ((i * 7) % 28)).padStart(2, '0')}T00:00:00Z`,
    },
    request: { method: 'POST', url: 'Observation' },
  }));
  const r = await call(fhir.base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry });
  expect(r.status).toBe(200);
  for (const e of r.body.entry) obsIds.push(e.response.location.split('/')[5]);
});

/** Links name the public base; the test reaches the real server by re-basing them (as clients of HAPI behind a proxy must; its links name the internal base). */
const rebase = (url: string) => url.replace('https://fhir.example.org/r4', fhir.base);

async function walk(first: string): Promise<{ pages: any[]; all: string[] }> {
  const pages: any[] = [];
  let url: string | undefined = first;
  while (url) {
    const r = await call(fhir.base, 'GET', url);
    expect(r.status).toBe(200);
    pages.push(r.body);
    const next = r.body.link.find((l: any) => l.relation === 'next')?.url;
    if (next) expect(next.startsWith('https://fhir.example.org/r4/Observation?')).toBe(true);
    url = next ? rebase(next) : undefined;
  }
  return { pages, all: pages.flatMap((p) => ids(p)) };
}

describe('keyset paging through every page', () => {
  it('returns each match exactly once over ceil(N/_count) pages, with next links on the public base', async () => {
    const { pages, all } = await walk(`Observation?subject=Patient/${patientId}&_count=10`);
    expect(pages).toHaveLength(6);
    expect(pages.slice(0, 5).every((p) => p.entry.length === 10)).toBe(true);
    expect(all).toHaveLength(N);
    expect(new Set(all).size).toBe(N);
    expect([...all].sort()).toEqual(obsIds.map((id) => `Observation/${id}`).sort());
    expect(pages[0].entry[0].fullUrl.startsWith('https://fhir.example.org/r4/Observation/')).toBe(true);
  });

  it('keeps _sort order across pages (descending date, ties broken stably)', async () => {
    const { all, pages } = await walk(`Observation?code=http://loinc.org|8867-4&_sort=-date&_count=7`);
    expect(new Set(all).size).toBe(N);
    const dates = pages.flatMap((p) => p.entry.map((e: any) => e.resource.effectiveDateTime));
    expect(dates).toEqual([...dates].sort().reverse());
    const byUpdated = await walk(`Observation?_sort=_lastUpdated&_count=20`);
    const stamps = byUpdated.pages.flatMap((p) => p.entry.map((e: any) => e.resource.meta.lastUpdated));
    expect(stamps).toEqual([...stamps].sort());
  });

  it('does not skip or repeat when resources are added while paging', async () => {
    const first = await call(fhir.base, 'GET', `Observation?subject=Patient/${patientId}&_count=20`);
    await call(fhir.base, 'POST', 'Observation', { resourceType: 'Observation', status: 'final', code: { text: 'late' }, subject: { reference: `Patient/${patientId}` } });
    const rest = await walk(rebase(first.body.link.find((l: any) => l.relation === 'next').url));
    const all = [...ids(first.body), ...rest.all];
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe(N + 1);
  });

  it('gives each _count its page when the same search runs with several in turn (issue 49: the row limit is written into each statement)', async () => {
    for (const query of [`Observation?subject=Patient/${patientId}`, `Observation?subject=Patient/${patientId}&_sort=date`]) {
      const pages: Array<[number, any]> = [];
      for (const count of [1, 30, 2, 30, 1]) pages.push([count, (await call(fhir.base, 'GET', `${query}&_count=${count}`)).body]);
      const whole = ids((await call(fhir.base, 'GET', `${query}&_count=1000`)).body);
      expect(whole.length).toBeGreaterThan(30);
      for (const [count, page] of pages) {
        expect(ids(page), `${query}&_count=${count}`).toEqual(whole.slice(0, count));
        expect(page.link.some((l: any) => l.relation === 'next')).toBe(true);
      }
    }
  });

  it('rejects a forged cursor with 400 and ignores _count above the maximum', async () => {
    expect((await call(fhir.base, 'GET', 'Observation?_cursor=bm90LWEtY3Vyc29y')).status).toBe(400);
    expect((await call(fhir.base, 'GET', 'Observation?_count=-1')).status).toBe(400);
    const big = await call(fhir.base, 'GET', 'Observation?_count=100000');
    expect(big.body.entry.length).toBe(N + 1);
  });

  it('uses X-Forwarded-* from a loopback proxy when no --public-base is set', async () => {
    const plain = await startServer();
    try {
      await call(plain.url, 'POST', 'Patient', { resourceType: 'Patient' });
      await call(plain.url, 'POST', 'Patient', { resourceType: 'Patient' });
      const r = await call(plain.url, 'GET', 'Patient?_count=1', undefined, { 'x-forwarded-host': 'gw.local', 'x-forwarded-port': '8443', 'x-forwarded-proto': 'https', 'x-forwarded-prefix': '/fhir-api' });
      expect(r.body.link.find((l: any) => l.relation === 'next').url).toMatch(/^https:\/\/gw\.local:8443\/fhir-api\/Patient\?_count=1&_cursor=/);
      const direct = await call(plain.url, 'GET', 'Patient?_count=1');
      const next = direct.body.link.find((l: any) => l.relation === 'next').url;
      expect(next.startsWith(`${plain.url}/Patient?`)).toBe(true);
      expect(await allPages(plain.url, next)).toHaveLength(1);
    } finally {
      await plain.close();
    }
  });
});

/**
 * Issue 49: searchset Bundles (search, `_include`, `$everything`) carry each resource as the JSON text the store
 * holds instead of serializing the parsed object again (store/stored-json.ts, server/bundle.ts bundleJson). The
 * bytes must be what JSON.stringify of the same Bundle gave before: checked over HTTP against a real server
 * with resources whose text is easy to get wrong (escapes, U+2028, characters outside the BMP, numbers JSON
 * writes in exponent form), and in-process on a real store, where the stored-text path is shown to be taken.
 */
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { everythingOperation } from '../../../src/fhir/everything/operation.js';
import { bundleJson, searchsetBundle } from '../../../src/fhir/server/bundle.js';
import { openFhirStore } from '../../../src/fhir/store/sqlite-store.js';
import { storedText } from '../../../src/fhir/store/stored-json.js';
import { search } from '../../../src/fhir/search/execute.js';
import type { Resource } from '../../../src/fhir/store/types.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { call, useFhirServer } from './helpers.js';

const f = useFhirServer();

/** Text whose JSON form has escapes of every kind JSON.stringify writes. */
const AWKWARD = 'quote " backslash \\ tab \t newline \n line sep \u2028 para \u2029 emoji \u{1F600} é';

function patient(value: string): Record<string, unknown> {
  return {
    resourceType: 'Patient',
    identifier: [{ system: 'urn:t:stored-json', value }],
    name: [{ family: AWKWARD, given: ['A', 'B'] }],
    extension: [
      { url: 'urn:t:big', valueDecimal: 1e21 },
      { url: 'urn:t:small', valueDecimal: 1e-7 },
      { url: 'urn:t:neg', valueDecimal: -0.5 },
      { url: 'urn:t:int', valueInteger: 2147483647 },
    ],
  };
}

async function raw(path: string): Promise<string> {
  const res = await request(`${f.base}/${path}`, { headers: { accept: 'application/fhir+json' } });
  const text = await res.body.text();
  expect(res.statusCode).toBe(200);
  return text;
}

describe('searchset Bundles written from the stored text (issue 49)', () => {
  it('answers a search, an _include and $everything with exactly JSON.stringify of the Bundle they parse to', async () => {
    const org = await call(f.base, 'POST', 'Organization', { resourceType: 'Organization', name: AWKWARD });
    expect(org.status).toBe(201);
    const p = await call(f.base, 'POST', 'Patient', { ...patient('p1'), managingOrganization: { reference: `Organization/${org.body.id}` } });
    expect(p.status).toBe(201);
    const obs = await call(f.base, 'POST', 'Observation', {
      resourceType: 'Observation',
      status: 'final',
      code: { text: AWKWARD },
      subject: { reference: `Patient/${p.body.id}` },
      valueQuantity: { value: 1e21, unit: 'u' },
    });
    expect(obs.status).toBe(201);
    for (const path of [
      `Patient?identifier=${encodeURIComponent('urn:t:stored-json|p1')}`,
      `Patient?identifier=${encodeURIComponent('urn:t:stored-json|p1')}&_include=Patient:organization`,
      `Observation?subject=Patient/${p.body.id}&_revinclude=Observation:subject`,
      `Patient/${p.body.id}/$everything`,
    ]) {
      const text = await raw(path);
      const bundle = JSON.parse(text);
      expect(bundle.entry.length, path).toBeGreaterThan(0);
      expect(text, path).toBe(JSON.stringify(bundle));
    }
    // and each resource in it is the one a read answers
    const everything = JSON.parse(await raw(`Patient/${p.body.id}/$everything`));
    expect(everything.entry.map((e: any) => `${e.resource.resourceType}/${e.resource.id}`).sort()).toEqual(
      [`Observation/${obs.body.id}`, `Organization/${org.body.id}`, `Patient/${p.body.id}`].sort(),
    );
    for (const e of everything.entry) {
      expect(e.resource).toEqual((await call(f.base, 'GET', `${e.resource.resourceType}/${e.resource.id}`)).body);
      expect(e.resource.resourceType === 'Organization' ? e.resource.name : AWKWARD).toBe(AWKWARD);
    }
  });
});

describe('bundleJson', () => {
  it('gives JSON.stringify of the Bundle, taking the stored text for resources the store read and serializing the rest', () => {
    const store = openFhirStore(tempDir('stored-json-'));
    try {
      const written = store.create(patient('p2') as unknown as Resource).resource;
      const found = search(store, { resourceType: 'Patient', params: [['identifier', 'urn:t:stored-json|p2']] });
      expect(found.matches).toHaveLength(1);
      const match = found.matches[0] as Resource;
      // the stored-text path is the one taken, and its text is the object's own serialization
      expect(storedText(match)).toBe(JSON.stringify(written));
      const notStored = { resourceType: 'Patient', id: 'x', name: [{ family: AWKWARD }] } as unknown as Resource;
      expect(storedText(notStored)).toBeUndefined();
      const bundle = searchsetBundle({ base: 'http://h/fhir', matches: [match], included: [notStored], selfUrl: 'http://h/fhir/Patient?a=%22', nextUrl: 'http://h/fhir/Patient?_cursor=x', total: 2 });
      expect(bundleJson(bundle)).toBe(JSON.stringify(bundle));
      const page = everythingOperation({ store, patientId: written.id as string, params: [], publicBase: 'http://h/fhir' });
      expect(page.entry.every((e) => storedText(e.resource) !== undefined)).toBe(true);
      expect(bundleJson(page)).toBe(JSON.stringify(page));
      // a Bundle not shaped as searchsetBundle makes it is JSON.stringify's own output
      const reordered = { ...bundle, entry: bundle.entry, id: 'late' };
      expect(bundleJson(reordered)).toBe(JSON.stringify(reordered));
      const extraKey = { ...bundle, entry: bundle.entry.map((e) => ({ search: e.search, fullUrl: e.fullUrl, resource: e.resource })) };
      expect(bundleJson(extraKey)).toBe(JSON.stringify(extraKey));
      expect(bundleJson({ resourceType: 'OperationOutcome', issue: [] })).toBe('{"resourceType":"OperationOutcome","issue":[]}');
    } finally {
      store.close();
      removeTempDirs();
    }
  });
});

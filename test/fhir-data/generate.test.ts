import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { toNdjsonLines, toTransactionBundles, MAX_BUNDLE_ENTRIES } from '../../src/fhir-data/generate/bundles.js';
import { runGenerate } from '../../src/fhir-data/generate/command.js';
import { countByType, generateDataset, parseSizes } from '../../src/fhir-data/generate/dataset.js';
import { PLATFORM_CARE_ID_SYSTEM, HN_SYSTEM, NATIONAL_ID_SYSTEM } from '../../src/fhir-data/generate/model.js';
import { Rng } from '../../src/fhir-data/generate/random.js';
import { createIo } from '../../src/output/io.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { Writable } from 'node:stream';

afterAll(removeTempDirs);

const sink = () => {
  const chunks: string[] = [];
  const stream = new Writable({ write(c, _e, cb) { chunks.push(String(c)); cb(); } });
  return { stream, text: () => chunks.join('') };
};

function dirBytes(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).sort().map((f) => [f, readFileSync(join(dir, f), 'utf8')]));
}

describe('fhir generate', () => {
  it('writes byte-identical files for the same seed, and different ones for another seed', async () => {
    const [a, b, c] = [tempDir(), tempDir(), tempDir()];
    const quiet = () => createIo({ stdout: sink().stream, stderr: sink().stream });
    expect(await runGenerate({ patients: 5, seed: 'alpha', sizes: '10-300', out: a, format: 'both' }, quiet())).toBe(0);
    expect(await runGenerate({ patients: 5, seed: 'alpha', sizes: '10-300', out: b, format: 'both' }, quiet())).toBe(0);
    expect(await runGenerate({ patients: 5, seed: 'beta', sizes: '10-300', out: c, format: 'both' }, quiet())).toBe(0);
    const [da, db, dc] = [dirBytes(a), dirBytes(b), dirBytes(c)];
    expect(Object.keys(da)).toEqual(['00-shared.json', '01-patients.ndjson', 'manifest.json', 'resources.ndjson']);
    expect(da).toEqual(db);
    expect(da['01-patients.ndjson']).not.toEqual(dc['01-patients.ndjson']);
  });

  it('keeps patient i the same when more patients are asked for', () => {
    const small = generateDataset({ patients: 2, seed: 7, sizes: '50' });
    const large = generateDataset({ patients: 4, seed: 7, sizes: '50' });
    expect(large.patients.slice(0, 2)).toEqual(small.patients);
  });

  it('makes patients of the exact sizes asked, from 10 to 10,000 resources', () => {
    const d = generateDataset({ patients: 3, seed: 's', sizes: '10,1000,10000' });
    const sizes = d.patients.map((p) => 1 + p.groups.reduce((n, g) => n + g.resources.length, 0));
    expect(sizes).toEqual([10, 1000, 10000]);
    expect(d.patients.map((p) => p.size)).toEqual([10, 1000, 10000]);
    const ranged = generateDataset({ patients: 40, seed: 's', sizes: '10-2000' });
    for (const p of ranged.patients) {
      expect(p.size).toBeGreaterThanOrEqual(10);
      expect(p.size).toBeLessThanOrEqual(2000);
    }
    expect(new Set(ranged.patients.map((p) => p.size)).size).toBeGreaterThan(20);
  });

  it('has the realistic mix: every clinical type, shared definitional resources, three patient identifier systems', () => {
    const d = generateDataset({ patients: 10, seed: 'mix', sizes: '500' });
    const counts = countByType(d);
    for (const type of ['Patient', 'Encounter', 'Observation', 'Condition', 'MedicationRequest', 'MedicationDispense', 'AllergyIntolerance', 'Procedure', 'Immunization', 'DiagnosticReport', 'Practitioner', 'Organization', 'Location', 'Medication']) {
      expect(counts[type], type).toBeGreaterThan(0);
    }
    expect(counts.Observation).toBeGreaterThan(counts.Encounter as number);
    const systems = (d.patients[0]?.patient.identifier as Array<{ system: string; value: string }>).map((i) => i.system);
    expect(systems).toEqual(expect.arrayContaining([PLATFORM_CARE_ID_SYSTEM, HN_SYSTEM, NATIONAL_ID_SYSTEM]));
    expect(new Set(d.patients.map((p) => p.careId)).size).toBe(10);
    // every relative reference points at a generated resource
    const keys = new Set([...d.shared, ...d.patients.flatMap((p) => [p.patient, ...p.groups.flatMap((g) => g.resources)])].map((r) => `${r.resourceType}/${r.id}`));
    for (const line of toNdjsonLines(d)) {
      for (const m of line.matchAll(/"reference":"([^"]+)"/g)) expect(keys.has(m[1] as string), m[1]).toBe(true);
    }
  });

  it('writes transaction Bundles of at most 100 entries: shared resources PUT by id, patient data POST with urn:uuid and ifNoneExist', () => {
    const d = generateDataset({ patients: 3, seed: 'b', sizes: '10,450,1200' });
    const { shared, patients } = toTransactionBundles(d);
    const sharedKeys = new Set(d.shared.map((r) => `${r.resourceType}/${r.id}`));
    expect(shared).toHaveLength(1);
    for (const e of shared[0]!.entry) {
      expect(e.request).toEqual({ method: 'PUT', url: `${e.resource.resourceType}/${e.resource.id}` });
    }
    let clinical = 0;
    for (const bundle of patients) {
      expect(bundle.type).toBe('transaction');
      expect(bundle.entry.length).toBeLessThanOrEqual(MAX_BUNDLE_ENTRIES);
      const fullUrls = new Set(bundle.entry.map((e) => e.fullUrl));
      for (const e of bundle.entry) {
        expect(e.fullUrl).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
        expect(e.request.method).toBe('POST');
        expect(e.request.ifNoneExist).toMatch(/^identifier=urn%3Ahospital-api%3A[a-z-]+\|.+/);
        expect(e.resource).not.toHaveProperty('id');
        for (const m of JSON.stringify(e.resource).matchAll(/"reference":"([^"]+)"/g)) {
          const r = m[1] as string;
          // inside the Bundle by urn:uuid, or a literal reference to a shared resource
          if (r.startsWith('urn:uuid:')) expect(fullUrls.has(r), r).toBe(true);
          else expect(sharedKeys.has(r), r).toBe(true);
        }
        if (e.resource.resourceType !== 'Patient') clinical++;
      }
    }
    expect(clinical).toBe(9 + 449 + 1199);
  });

  it('refuses bad options with a coded error', async () => {
    expect(() => parseSizes('0-10')).toThrow(expect.objectContaining({ code: 'ERR_FHIR_GENERATE_BAD_OPTION' }));
    expect(() => parseSizes('20-10')).toThrow(/reversed/);
    expect(() => parseSizes('10001')).toThrow(/1\.\.10000/);
    expect(() => generateDataset({ patients: -1, seed: 'x' })).toThrow(expect.objectContaining({ code: 'ERR_FHIR_GENERATE_BAD_OPTION' }));
    expect(() => generateDataset({ patients: 1, seed: '' })).toThrow(/seed/);
    const rng = new Rng('x');
    const u = rng.uuid();
    expect(u).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

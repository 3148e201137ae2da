/**
 * Issue 49: the compiled check (src/fhir/validation/compiled-check.ts) passes a resource without asking
 * @medplum/core's `validateResource`, so it may pass only what Medplum finds no error in. Differential:
 * each resource below goes through both, and the outcome the server uses (nothing when the compiled check
 * passes, Medplum's findings otherwise) must equal Medplum's findings, issue for issue (severity, code,
 * details, expression), over
 * (a) HL7's R4 examples (hl7.fhir.r4.examples 4.0.1, cached by scripts/hl7-examples.sh as for
 *     test/fhir/examples/hl7-examples.test.ts; the files of more than 1 MB, a few Bundles Medplum takes
 *     seconds each over, are left out),
 * (b) the synthetic generator's resources (`fhir generate`),
 * (c) the invalid corpus (test/fixtures/fhir-invalid/),
 * (d) systematic mutations of valid resources from (a) and (b): each element dropped, each primitive of
 *     the wrong JSON type or a bad format (code, date, calendar day, integer range, whitespace), each
 *     object emptied, given an unknown element, a `_` extension or a nested resourceType, each single
 *     value wrapped in an array and each array unwrapped, emptied, doubled or nulled, each choice key
 *     renamed to another type or doubled with a second type.
 * Each set also counts the resources the compiled check passes, so a check that passes nothing (and
 * could never disagree) fails too.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateDataset } from '../../../src/fhir-data/generate/dataset.js';
import { isValidCalendarDate } from '@medplum/core';
import { compiledCheckPasses, dayExists } from '../../../src/fhir/validation/compiled-check.js';
import { loadStructureDefinitions, medplumIssues, validationIssues } from '../../../src/fhir/validation/validate.js';

type Json = Record<string, any>;

const HL7_DIR = join(process.env.HL7_EXAMPLES_DIR ?? '/var/cache/hospital-api-ci/hl7.fhir.r4.examples-4.0.1', 'package');
const hl7Present = existsSync(join(HL7_DIR, 'package.json'));
if (!hl7Present) process.stdout.write(`SKIPPED the HL7 part of the differential: not found in ${HL7_DIR}; run scripts/hl7-examples.sh\n`);
const MAX_EXAMPLE_BYTES = 1024 * 1024;

interface Tally {
  resources: number;
  passed: number;
  refused: number;
  differences: string[];
}

/** Medplum's findings, or the error it throws (some malformed input makes its crawler throw: kept as it was). */
function medplum(resource: unknown): unknown[] | { threw: string } {
  try {
    return medplumIssues(resource as object);
  } catch (err) {
    return { threw: String(err) };
  }
}

/** Both validators over `resource`: a difference is recorded with its label, Medplum's findings and the outcome. */
function compare(resource: unknown, label: string, tally: Tally): void {
  const expected = medplum(resource);
  let passed: boolean | string;
  try {
    passed = compiledCheckPasses(resource as Json);
  } catch (err) {
    passed = `the compiled check threw ${String(err)}`;
  }
  const outcome = passed === true ? [] : typeof passed === 'string' ? { threw: passed } : medplum(resource);
  tally.resources++;
  if (passed === true) tally.passed++;
  if (!Array.isArray(expected) || expected.length > 0) tally.refused++;
  if (!isDeepStrictEqual(outcome, expected)) tally.differences.push(`${label}: Medplum ${JSON.stringify(expected).slice(0, 300)}, compiled outcome ${JSON.stringify(outcome).slice(0, 300)}`);
}

const tally = (): Tally => ({ resources: 0, passed: 0, refused: 0, differences: [] });

/** Every path to a value in a JSON tree (object keys and array indices), the root excluded. */
function paths(value: unknown, at: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  if (Array.isArray(value)) value.forEach((v, i) => (out.push([...at, i]), paths(v, [...at, i], out)));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push([...at, k]), paths(v, [...at, k], out);
  return out;
}

function get(root: Json, path: Array<string | number>): any {
  return path.reduce((node: any, k) => node?.[k], root);
}

/** A copy of `root` with `change` applied to the parent of `path` (holder, last key). */
function mutated(root: Json, path: Array<string | number>, change: (holder: any, key: string | number) => void): Json {
  const copy = structuredClone(root);
  change(get(copy, path.slice(0, -1)), path.at(-1)!);
  return copy;
}

/** The mutations of one resource, each labelled with its path and kind; at most `maxPaths` paths, spread evenly. */
function* mutations(resource: Json, maxPaths = Number.POSITIVE_INFINITY): Generator<[string, Json]> {
  yield ['unknown element at the root', { ...resource, unknownElement: 'x' }];
  const all = paths(resource);
  const step = Math.max(1, Math.ceil(all.length / maxPaths));
  for (const path of all.filter((_, i) => i % step === 0)) {
    const where = path.join('.');
    const value = get(resource, path);
    const set = (v: unknown) => mutated(resource, path, (h, k) => (h[k] = v));
    const key = path.at(-1);
    if (typeof key === 'string') {
      if (key === 'resourceType') continue;
      yield [`${where} dropped`, mutated(resource, path, (h, k) => delete h[k])];
      const choice = /^([a-z][a-z]*)([A-Z][A-Za-z]*)$/.exec(key);
      if (choice) {
        const other = choice[2] === 'String' ? 'Boolean' : 'String';
        yield [`${where} renamed to another type`, mutated(resource, path, (h, k) => ((h[`${choice[1]}${other}`] = h[k]), delete h[k]))];
        yield [`${where} with a second type`, mutated(resource, path, (h) => (h[`${choice[1]}${other}`] = other === 'String' ? 'x' : true))];
        yield [`${where} of an unknown type`, mutated(resource, path, (h, k) => ((h[`${choice[1]}Foo`] = h[k]), delete h[k]))];
      }
    }
    yield [`${where} null`, set(null)];
    if (typeof value === 'string') {
      yield [`${where} a number`, set(42)];
      yield [`${where} empty`, set('')];
      yield [`${where} whitespace`, set('  ')];
      yield [`${where} a bad code`, set('a  b')];
      yield [`${where} not a calendar day`, set('2023-02-30')];
      yield [`${where} a date of another form`, set('2023/01/05')];
      yield [`${where} not base64 (or any url)`, set('not base64 !')];
    } else if (typeof value === 'number') {
      yield [`${where} a string`, set('7')];
      yield [`${where} fractional`, set(1.5)];
      yield [`${where} negative`, set(-1)];
      yield [`${where} zero`, set(0)];
      yield [`${where} out of the integer range`, set(2 ** 31)];
    } else if (typeof value === 'boolean') {
      yield [`${where} a string`, set('true')];
    } else if (Array.isArray(value)) {
      yield [`${where} empty`, set([])];
      yield [`${where} unwrapped`, set(value[0])];
      yield [`${where} doubled`, set([...value, ...value])];
      yield [`${where} holding null`, set([null])];
    } else if (value && typeof value === 'object') {
      yield [`${where} empty`, set({})];
      yield [`${where} a string`, set('x')];
      yield [`${where} wrapped in an array`, set([value])];
      yield [`${where} with an unknown element`, set({ ...value, unknownElement: 'x' })];
      yield [`${where} with a primitive extension`, set({ ...value, _id: { extension: [{ url: 'http://example.org/x', valueString: 'x' }] } })];
      yield [`${where} with a nested resourceType`, set({ ...value, resourceType: 'Patient' })];
    }
    if (typeof value !== 'object' || value === null) yield [`${where} wrapped in an array`, set([value])];
  }
}

function synthetic(): Json[] {
  const ds = generateDataset({ patients: 6, seed: 'compiled-check', sizes: '60' });
  return [...ds.shared, ...ds.patients.flatMap((p) => [p.patient, ...p.groups.flatMap((g) => g.resources)])] as Json[];
}

/** A few resources of each type, for mutating (each type's first `n`). */
function samplePerType(resources: Json[], n: number): Json[] {
  const seen = new Map<string, number>();
  return resources.filter((r) => {
    const k = seen.get(r.resourceType) ?? 0;
    seen.set(r.resourceType, k + 1);
    return k < n;
  });
}

function hl7Examples(): Array<[string, Json]> {
  const out: Array<[string, Json]> = [];
  for (const f of readdirSync(HL7_DIR).sort()) {
    if (!f.endsWith('.json') || f === 'package.json' || f.startsWith('.')) continue;
    if (statSync(join(HL7_DIR, f)).size > MAX_EXAMPLE_BYTES) continue;
    out.push([f, JSON.parse(readFileSync(join(HL7_DIR, f), 'utf8')) as Json]);
  }
  return out;
}

beforeAll(() => loadStructureDefinitions());

describe('the compiled check gives exactly Medplum\'s outcome', () => {
  it('over the synthetic generator\'s resources, and passes each of them without Medplum', () => {
    const t = tally();
    const resources = synthetic();
    for (const r of resources) compare(r, `${r.resourceType}/${r.id}`, t);
    expect(t.differences).toEqual([]);
    expect(t.refused).toBe(0);
    // the point of the compiled check: the data the server ingests is passed by it
    expect(t.passed).toBe(resources.length);
  });

  it('over mutations of the synthetic resources', () => {
    const t = tally();
    for (const r of samplePerType(synthetic(), 2)) for (const [label, m] of mutations(r)) compare(m, `${r.resourceType}/${r.id} ${label}`, t);
    process.stdout.write(`synthetic mutations: ${t.resources}, ${t.passed} passed by the compiled check, ${t.refused} refused\n`);
    expect(t.differences).toEqual([]);
    // most mutations are refused (by Medplum: the compiled check passes none of those), some stay valid
    expect(t.refused).toBeGreaterThan(t.resources / 2);
    expect(t.passed).toBeGreaterThan(0);
  });

  it('over the invalid corpus (test/fixtures/fhir-invalid/)', () => {
    const t = tally();
    const dir = new URL('../../fixtures/fhir-invalid/', import.meta.url);
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.json') && n !== 'known-differences.json')) {
      for (const c of JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as Array<{ id: string; resource: Json }>) compare(c.resource, c.id, t);
    }
    expect(t.differences).toEqual([]);
    expect(t.resources).toBeGreaterThan(100);
    expect(t.refused).toBeGreaterThan(0);
  });

  describe.skipIf(!hl7Present)('HL7 R4 examples', () => {
    let examples: Array<[string, Json]> = [];
    beforeAll(() => {
      examples = hl7Examples();
    });

    it('over every example of 1 MB or less', () => {
      const t = tally();
      for (const [f, r] of examples) compare(r, f, t);
      expect(t.differences).toEqual([]);
      expect(t.resources).toBeGreaterThan(5000);
      // the compiled check leaves contained resources, Bundles, extensions on primitives and the like to Medplum
      expect(t.passed).toBeGreaterThan(t.resources * 0.8);
    }, 120_000);

    it('over mutations of one example in 50 (below 20 kB; at most 30 of its paths each)', () => {
      const t = tally();
      const sample = examples.filter(([, r]) => JSON.stringify(r).length < 20_000).filter((_, i) => i % 50 === 0);
      for (const [f, r] of sample) for (const [label, m] of mutations(r, 30)) compare(m, `${f} ${label}`, t);
      process.stdout.write(`HL7 mutations: ${t.resources} from ${sample.length} examples, ${t.passed} passed by the compiled check, ${t.refused} refused\n`);
      expect(t.differences).toEqual([]);
      expect(t.passed).toBeGreaterThan(0);
      expect(t.refused).toBeGreaterThan(t.resources / 2);
    }, 120_000);
  });
});

describe('invariants the compiled check skips while their element is absent', () => {
  const obs = { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '2345-7' }] }, valueQuantity: { value: 1 } };
  it.each([
    ['obs-6: a value and a dataAbsentReason', { ...obs, dataAbsentReason: { text: 'x' } }],
    ['obs-7: a component coded as the Observation is', { ...obs, component: [{ code: obs.code, valueString: 'x' }] }],
    // (a contained resource makes the compiled check defer anyway: these three hold whatever the guard does)
    ['dom-2: a contained resource with contained resources', { ...obs, contained: [{ resourceType: 'Patient', id: 'p', contained: [{ resourceType: 'Patient', id: 'q' }] }] }],
    ['dom-4: a contained resource with a versionId', { ...obs, contained: [{ resourceType: 'Patient', id: 'p', meta: { versionId: '1' } }] }],
    ['dom-5: a contained resource with a security label', { ...obs, contained: [{ resourceType: 'Patient', id: 'p', meta: { security: [{ code: 'R' }] } }] }],
  ])('are evaluated once it is present (%s): Medplum\'s finding stands', (_, resource) => {
    const t = tally();
    compare(resource, 'violated', t);
    expect(t.differences).toEqual([]);
    expect(t.passed).toBe(0);
    expect(medplumIssues(resource)).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'invariant' })]));
  });
  it('and without it the resource passes', () => {
    expect(compiledCheckPasses(obs)).toBe(true);
    expect(medplumIssues(obs)).toEqual([]);
  });
});

describe('validationIssues with the compiled check', () => {
  it('answers as before for a valid and an invalid resource (the invalid one gets Medplum\'s findings)', () => {
    const valid = { resourceType: 'Observation', status: 'final', code: { text: 'x' } };
    expect(compiledCheckPasses(valid)).toBe(true);
    expect(validationIssues(valid)).toEqual([]);
    const invalid = { resourceType: 'Observation', code: { text: 'x' } };
    expect(compiledCheckPasses(invalid)).toBe(false);
    expect(validationIssues(invalid)).toEqual(medplumIssues(invalid));
    expect(validationIssues(invalid)).toEqual([expect.objectContaining({ severity: 'error', expression: ['Observation.status'] })]);
  });
});

describe('days of a month', () => {
  it('exist where Medplum\'s isValidCalendarDate says so, for every year the date regex allows and days 28-31', () => {
    const differ: string[] = [];
    for (let y = 1; y <= 9999; y++) {
      for (let m = 1; m <= 12; m++) {
        for (let d = 28; d <= 31; d++) {
          const s = `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${d}`;
          if (dayExists(s) !== isValidCalendarDate(s)) differ.push(s);
        }
      }
    }
    expect(differ).toEqual([]);
    expect(dayExists('2024-02-29T10:00:00Z')).toBe(true);
    expect(dayExists('2023-02-29')).toBe(false);
    expect(dayExists('2023-02')).toBe(true);
  });
});

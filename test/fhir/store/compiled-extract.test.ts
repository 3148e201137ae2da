/**
 * A search parameter's compiled extractor (definitions/search-params.ts: a FHIRPath expression of a plain form
 * turned into a direct JSON walk) gives the index rows (store/index-rows.ts) that the values Medplum's FHIRPath
 * selects with the same expression give. Issue 49 compiled one more form, `Type.x.ofType(T).y` (Observation's
 * `value-string`, on every Observation), which FHIRPath evaluated before: the rows written stay the same. (The values
 * themselves may differ where no row comes of them: FHIRPath selects a primitive's `_text` extension object alone.) Checked over the synthetic generator's resources
 * and HL7's R4 examples (cached by scripts/hl7-examples.sh; that part skips when absent), plus the same resources
 * with the selected element given each other shape a FHIR client could send.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { evalFhirPathTyped, parseFhirPath, toTypedValue } from '@medplum/core';
import { describe, expect, it } from 'vitest';
import { generateDataset } from '../../../src/fhir-data/generate/dataset.js';
import { paramExpression, paramsFor, type ParamDef } from '../../../src/fhir/definitions/search-params.js';
import { addRows, type IndexRows } from '../../../src/fhir/store/index-rows.js';

type Json = Record<string, any>;
const HL7_DIR = join(process.env.HL7_EXAMPLES_DIR ?? '/var/cache/hospital-api-ci/hl7.fhir.r4.examples-4.0.1', 'package');
const hl7Present = existsSync(join(HL7_DIR, 'package.json'));

/** The parameters of a type whose expression has a part of the form Issue 49 compiled: `.ofType(T)` then a path. */
const OF_TYPE_THEN_PATH = /\.ofType\([A-Za-z]+\)\.[A-Za-z]/;

/** The rows of a parameter's values, each as JSON, sorted (the order of a parameter's values makes no difference to the table). */
function rows(def: ParamDef, values: unknown[]): string[] {
  const out: IndexRows = { token: [], string: [], reference: [], date: [], number: [] };
  addRows(out, def, values);
  return Object.entries(out).flatMap(([table, list]) => (list as unknown[][]).map((row) => JSON.stringify([table, ...row]))).sort();
}

function differences(resources: Json[], select: (expression: string) => boolean): { checked: number; nonEmpty: number; differ: string[] } {
  const atoms = new Map<string, ReturnType<typeof parseFhirPath>>();
  let checked = 0;
  let nonEmpty = 0;
  const differ: string[] = [];
  for (const r of resources) {
    for (const def of paramsFor(r.resourceType as string).values()) {
      const expression = paramExpression(r.resourceType as string, def.code);
      if (!expression || !select(expression)) continue;
      let atom = atoms.get(expression);
      if (!atom) atoms.set(expression, (atom = parseFhirPath(expression)));
      const fhirpath = rows(def, evalFhirPathTyped(atom, [toTypedValue(r)]).map((tv) => tv.value));
      const compiled = rows(def, def.extract(r));
      checked++;
      if (fhirpath.length) nonEmpty++;
      if (JSON.stringify(fhirpath) !== JSON.stringify(compiled)) differ.push(`${r.resourceType}/${r.id} ${def.code}: FHIRPath ${fhirpath.join(' ')} compiled ${compiled.join(' ')}`);
    }
  }
  return { checked, nonEmpty, differ };
}

function synthetic(): Json[] {
  const ds = generateDataset({ patients: 6, seed: 'compiled-extract', sizes: '200' });
  return [...ds.shared, ...ds.patients.flatMap((p) => [p.patient, ...p.groups.flatMap((g) => g.resources)])] as Json[];
}

/** Every example resource of HL7's set, and the resources inside its Bundles. */
function hl7Examples(): Json[] {
  const out: Json[] = [];
  for (const f of readdirSync(HL7_DIR).sort()) {
    if (!f.endsWith('.json') || f === 'package.json' || f.startsWith('.')) continue;
    if (statSync(join(HL7_DIR, f)).size > 1_000_000) continue;
    const r = JSON.parse(readFileSync(join(HL7_DIR, f), 'utf8')) as Json;
    out.push(r);
    if (r.resourceType === 'Bundle' && Array.isArray(r.entry)) for (const e of r.entry) if (e?.resource?.resourceType) out.push(e.resource as Json);
  }
  return out;
}

/** The resource with value[x] as each shape `Observation.value.ofType(CodeableConcept).text` might meet. */
function valueShapes(r: Json): Json[] {
  const { valueQuantity: _q, valueCodeableConcept: _c, valueString: _s, ...rest } = r;
  return [
    { ...rest, valueCodeableConcept: { text: 'Positive' } },
    { ...rest, valueCodeableConcept: { coding: [{ system: 'http://snomed.info/sct', code: '10828004' }] } },
    { ...rest, valueCodeableConcept: { text: 'Ångström Négatif', coding: [{ code: 'x' }] } },
    { ...rest, valueString: 'free text' },
    { ...rest, valueQuantity: { value: 1, unit: 'mg' } },
    { ...rest, valueCodeableConcept: { _text: { extension: [{ url: 'http://example.org/x', valueString: 'y' }] } } },
    rest,
  ];
}

describe('compiled search-parameter extractors give the rows of what FHIRPath selects', () => {
  it('for `.ofType(T)` followed by a path, over the synthetic resources and each shape of Observation.value', () => {
    const resources = synthetic();
    const observations = resources.filter((r) => r.resourceType === 'Observation').slice(0, 50);
    const { checked, nonEmpty, differ } = differences([...resources, ...observations.flatMap(valueShapes)], (e) => OF_TYPE_THEN_PATH.test(e));
    expect(differ).toEqual([]);
    expect(checked).toBeGreaterThan(resources.filter((r) => r.resourceType === 'Observation').length);
    expect(nonEmpty).toBeGreaterThan(0);
  });

  it.skipIf(!hl7Present)('for `.ofType(T)` followed by a path, over HL7\'s R4 examples', () => {
    const { checked, nonEmpty, differ } = differences(hl7Examples(), (e) => OF_TYPE_THEN_PATH.test(e));
    expect(differ).toEqual([]);
    expect(checked).toBeGreaterThan(100);
    expect(nonEmpty).toBeGreaterThan(0);
  }, 120_000);
});

import { beforeAll, describe, expect, it } from 'vitest';
import { allPages, call, ids, useFhirServer } from './helpers.js';

const fhir = useFhirServer();
const S = 'urn:test:ids';
const made: Record<string, string> = {};

async function create(key: string, resource: Record<string, unknown>): Promise<string> {
  const r = await call(fhir.base, 'POST', String(resource.resourceType), resource);
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  made[key] = r.body.id;
  return r.body.id;
}

/** Builds `?name=value…` with every value percent-encoded, as a careful client would (http://hl7.org/fhir/R4/search.html#escaping). */
const q = (type: string, params: Array<[string, string]>) => `${type}?${params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`;
const found = async (path: string) => {
  const r = await call(fhir.base, 'GET', path);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return ids(r.body).sort();
};

beforeAll(async () => {
  await create('plain', { resourceType: 'Patient', identifier: [{ system: S, value: '123' }], name: [{ family: 'Müller', given: ['Anna'] }], birthDate: '1980-05-17', gender: 'female' });
  await create('comma', { resourceType: 'Patient', identifier: [{ system: S, value: 'a,b' }], name: [{ family: 'Comma' }], birthDate: '1990' });
  await create('pipe', { resourceType: 'Patient', identifier: [{ system: S, value: 'a|b' }], name: [{ family: 'Pipe' }] });
  await create('dollar', { resourceType: 'Patient', identifier: [{ system: S, value: 'x$y' }], name: [{ family: 'Dollar' }] });
  await create('backslash', { resourceType: 'Patient', identifier: [{ system: S, value: 'back\\slash' }], name: [{ family: 'Slash' }] });
  await create('nosys', { resourceType: 'Patient', identifier: [{ value: '123' }], name: [{ family: 'Nosystem' }], birthDate: '2001-01-01' });
  await create('org', { resourceType: 'Organization', name: 'General Hospital', identifier: [{ system: S, value: 'org-1' }] });
  const a = made.plain as string;
  await create('obsA', { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] }, subject: { reference: `Patient/${a}` }, effectiveDateTime: '2020-03-04T10:00:00Z' });
  await create('obsB', { resourceType: 'Observation', status: 'amended', code: { coding: [{ system: 'http://loinc.org', code: '29463-7' }] }, subject: { reference: `Patient/${made.comma}` }, performer: [{ reference: `Organization/${made.org}` }], effectivePeriod: { start: '2021-01-01', end: '2021-02-01' } });
  await create('risk', { resourceType: 'RiskAssessment', status: 'final', subject: { reference: `Patient/${a}` }, prediction: [{ probabilityDecimal: 0.25 }] });
  await create('vs', { resourceType: 'ValueSet', status: 'active', url: 'http://example.org/fhir/ValueSet/colours' });
});

describe('token search and escaping (http://hl7.org/fhir/R4/search.html#token, #escaping)', () => {
  it('matches system|value, value alone, |value (no system) and system| (any value)', async () => {
    expect(await found(q('Patient', [['identifier', `${S}|123`]]))).toEqual([`Patient/${made.plain}`]);
    expect(await found(q('Patient', [['identifier', '123']]))).toEqual([`Patient/${made.plain}`, `Patient/${made.nosys}`].sort());
    expect(await found(q('Patient', [['identifier', '|123']]))).toEqual([`Patient/${made.nosys}`]);
    expect(await found(q('Patient', [['identifier', `${S}|`]]))).toHaveLength(5);
    expect(await found(q('Patient', [['identifier', `${S}|999`]]))).toEqual([]);
  });

  it('finds values holding , | $ and \\ when escaped, and treats unescaped , as OR', async () => {
    expect(await found(q('Patient', [['identifier', `${S}|a\\,b`]]))).toEqual([`Patient/${made.comma}`]);
    expect(await found(q('Patient', [['identifier', `${S}|a\\|b`]]))).toEqual([`Patient/${made.pipe}`]);
    expect(await found(q('Patient', [['identifier', `${S}|x\\$y`]]))).toEqual([`Patient/${made.dollar}`]);
    expect(await found(q('Patient', [['identifier', `${S}|back\\\\slash`]]))).toEqual([`Patient/${made.backslash}`]);
    // an escaped `|` (http://hl7.org/fhir/R4/search.html#escaping), percent-encoded by hand
    expect(await found(`Patient?identifier=urn%3Atest%3Aids%7Ca%5C%7Cb`)).toEqual([`Patient/${made.pipe}`]);
    expect(await found(q('Patient', [['identifier', `${S}|a,${S}|123`]]))).toEqual([`Patient/${made.plain}`].sort());
    expect(await found(q('Patient', [['identifier', `${S}|123,${S}|a\\,b`]]))).toEqual([`Patient/${made.plain}`, `Patient/${made.comma}`].sort());
  });

  it('rejects a bare backslash with 400 OperationOutcome', async () => {
    const r = await call(fhir.base, 'GET', q('Patient', [['identifier', `${S}|a\\b`]]));
    expect(r.status).toBe(400);
    expect(r.body.resourceType).toBe('OperationOutcome');
  });

  it('supports codes, :not, :missing, repeated parameters as AND, and _id', async () => {
    expect(await found(q('Observation', [['code', 'http://loinc.org|8867-4']]))).toEqual([`Observation/${made.obsA}`]);
    expect(await found(q('Observation', [['status:not', 'final']]))).toEqual([`Observation/${made.obsB}`]);
    expect(await found(q('Patient', [['birthdate:missing', 'true']]))).toEqual([`Patient/${made.pipe}`, `Patient/${made.dollar}`, `Patient/${made.backslash}`].sort());
    expect(await found(q('Patient', [['identifier', '123'], ['gender', 'female']]))).toEqual([`Patient/${made.plain}`]);
    expect(await found(q('Patient', [['_id', `${made.pipe},${made.dollar}`]]))).toEqual([`Patient/${made.pipe}`, `Patient/${made.dollar}`].sort());
  });
});

describe('string, reference, date, uri and number search', () => {
  it('string: case- and accent-insensitive prefix, :exact and :contains', async () => {
    expect(await found(q('Patient', [['name', 'mul']]))).toEqual([`Patient/${made.plain}`]);
    expect(await found(q('Patient', [['family', 'MÜLLER']]))).toEqual([`Patient/${made.plain}`]);
    expect(await found(q('Patient', [['given', 'ann']]))).toEqual([`Patient/${made.plain}`]);
    expect(await found(q('Patient', [['family:exact', 'Mül']]))).toEqual([]);
    expect(await found(q('Patient', [['family:contains', 'las']]))).toEqual([`Patient/${made.backslash}`]);
    expect(await found(q('Organization', [['name', 'general']]))).toEqual([`Organization/${made.org}`]);
  });

  it('reference: Type/id, bare id, :Type modifier and absolute URL', async () => {
    const a = made.plain as string;
    expect(await found(q('Observation', [['subject', `Patient/${a}`]]))).toEqual([`Observation/${made.obsA}`]);
    expect(await found(q('Observation', [['subject', a]]))).toEqual([`Observation/${made.obsA}`]);
    expect(await found(q('Observation', [['subject:Patient', a]]))).toEqual([`Observation/${made.obsA}`]);
    expect(await found(q('Observation', [['patient', `${fhir.base}/Patient/${a}`]]))).toEqual([`Observation/${made.obsA}`]);
    expect(await found(q('Observation', [['performer', `Organization/${made.org}`]]))).toEqual([`Observation/${made.obsB}`]);
  });

  it('date: precision ranges and the eq/ne/gt/lt/ge/le/sa/eb prefixes, on dateTime and Period', async () => {
    expect(await found(q('Patient', [['birthdate', '1980']]))).toEqual([`Patient/${made.plain}`]);
    expect(await found(q('Patient', [['birthdate', '1980-05']]))).toEqual([`Patient/${made.plain}`]);
    expect(await found(q('Patient', [['birthdate', 'lt1991']]))).toEqual([`Patient/${made.plain}`, `Patient/${made.comma}`].sort());
    expect(await found(q('Patient', [['birthdate', 'gt1990']]))).toEqual([`Patient/${made.nosys}`]);
    expect(await found(q('Patient', [['birthdate', 'ge1990-06-01'], ['birthdate', 'le2001-01-01']]))).toEqual([`Patient/${made.comma}`, `Patient/${made.nosys}`].sort());
    expect(await found(q('Patient', [['birthdate', 'ne1980-05-17']]))).toEqual([`Patient/${made.comma}`, `Patient/${made.nosys}`].sort());
    expect(await found(q('Observation', [['date', '2020-03-04']]))).toEqual([`Observation/${made.obsA}`]);
    expect(await found(q('Observation', [['date', 'sa2020-12-31']]))).toEqual([`Observation/${made.obsB}`]);
    expect(await found(q('Observation', [['date', 'eb2021']]))).toEqual([`Observation/${made.obsA}`]);
    expect(await found(q('Observation', [['date', '2021-01-15']]))).toEqual([]); // the Period is wider than the day
    expect(await found(q('Observation', [['date', 'ge2021-01-15']]))).toEqual([`Observation/${made.obsB}`]);
    expect((await call(fhir.base, 'GET', q('Patient', [['birthdate', 'yesterday']]))).status).toBe(400);
  });

  it('uri (exact and :below) and number (precision-aware eq, gt)', async () => {
    expect(await found(q('ValueSet', [['url', 'http://example.org/fhir/ValueSet/colours']]))).toEqual([`ValueSet/${made.vs}`]);
    expect(await found(q('ValueSet', [['url', 'http://example.org/fhir/ValueSet']]))).toEqual([]);
    expect(await found(q('ValueSet', [['url:below', 'http://example.org/fhir/']]))).toEqual([`ValueSet/${made.vs}`]);
    expect(await found(q('RiskAssessment', [['probability', '0.25']]))).toEqual([`RiskAssessment/${made.risk}`]);
    expect(await found(q('RiskAssessment', [['probability', 'gt0.3']]))).toEqual([]);
    expect(await found(q('RiskAssessment', [['probability', 'lt0.3']]))).toEqual([`RiskAssessment/${made.risk}`]);
  });

  it('_lastUpdated and ignored unknown parameters (left out of link.self)', async () => {
    expect(await found(q('Patient', [['_lastUpdated', 'gt2000-01-01'], ['identifier', `${S}|123`]]))).toEqual([`Patient/${made.plain}`]);
    expect(await found(q('Patient', [['_lastUpdated', 'lt2000-01-01']]))).toEqual([]);
    const r = await call(fhir.base, 'GET', q('Patient', [['no-such-param', 'x'], ['identifier', `${S}|123`]]));
    expect(r.body.link[0].url).not.toContain('no-such-param');
    expect(ids(r.body)).toEqual([`Patient/${made.plain}`]);
  });
});

describe('totals', () => {
  it('counts with _summary=count, _count=0 and _total=accurate; omits a total it would have to guess', async () => {
    const c = await call(fhir.base, 'GET', q('Patient', [['identifier', `${S}|`], ['_summary', 'count']]));
    expect(c.body.total).toBe(5);
    expect(c.body.entry ?? []).toEqual([]);
    expect((await call(fhir.base, 'GET', q('Patient', [['_count', '0']]))).body.total).toBe(6);
    const paged = await call(fhir.base, 'GET', q('Patient', [['_count', '2']]));
    expect(paged.body.total).toBeUndefined();
    const accurate = await call(fhir.base, 'GET', q('Patient', [['_count', '2'], ['_total', 'accurate']]));
    expect(accurate.body.total).toBe(6);
    expect(accurate.body.entry).toHaveLength(2);
  });
});

describe('_include and _revinclude (one level)', () => {
  it('adds the referenced and the referencing resources as include entries', async () => {
    const inc = (await call(fhir.base, 'GET', q('Observation', [['_id', made.obsB as string], ['_include', 'Observation:subject'], ['_include', 'Observation:performer']]))).body;
    expect(inc.entry.filter((e: any) => e.search.mode === 'match').map((e: any) => e.resource.id)).toEqual([made.obsB]);
    expect(inc.entry.filter((e: any) => e.search.mode === 'include').map((e: any) => `${e.resource.resourceType}/${e.resource.id}`).sort()).toEqual(
      [`Patient/${made.comma}`, `Organization/${made.org}`].sort(),
    );
    const rev = (await call(fhir.base, 'GET', q('Patient', [['_id', made.plain as string], ['_revinclude', 'Observation:subject'], ['_revinclude', 'RiskAssessment:subject']]))).body;
    expect(ids(rev).sort()).toEqual([`Patient/${made.plain}`, `Observation/${made.obsA}`, `RiskAssessment/${made.risk}`].sort());
    expect((await call(fhir.base, 'GET', q('Patient', [['_include', 'Patient:name']]))).status).toBe(400);
  });
});

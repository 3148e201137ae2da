import { describe, expect, it } from 'vitest';
import { call, useFhirServer } from './helpers.js';

const fhir = useFhirServer();

const INTERACTIONS = new Set(['read', 'vread', 'update', 'patch', 'delete', 'history-instance', 'history-type', 'create', 'search-type']);

describe('GET /fhir/metadata (http://hl7.org/fhir/R4/http.html#capabilities)', () => {
  it('is a valid R4 CapabilityStatement', async () => {
    const r = await call(fhir.base, 'GET', 'metadata');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toContain('application/fhir+json');
    const cs = r.body;
    expect(cs.resourceType).toBe('CapabilityStatement');
    expect(cs.status).toBe('active');
    expect(Number.isNaN(Date.parse(cs.date))).toBe(false);
    expect(cs.kind).toBe('instance');
    // cpb-14: kind=instance requires implementation; implementation.description is required
    expect(cs.implementation.description).toBeTruthy();
    expect(cs.implementation.url).toBe(fhir.base);
    expect(cs.software.name).toBeTruthy();
    expect(cs.fhirVersion).toBe('4.0.1');
    expect(cs.format).toContain('application/fhir+json');
    expect(cs.rest).toHaveLength(1);
    const rest = cs.rest[0];
    expect(rest.mode).toBe('server');
    expect(rest.interaction.map((i: any) => i.code).sort()).toEqual(['batch', 'transaction']);
    const types = rest.resource.map((x: any) => x.type);
    expect(new Set(types).size).toBe(types.length); // cpb-9
    for (const t of ['Patient', 'Observation', 'Encounter', 'MedicationRequest', 'Practitioner', 'Binary', 'Bundle']) expect(types).toContain(t);
    for (const res of rest.resource) {
      for (const i of res.interaction) expect(INTERACTIONS.has(i.code), `${res.type} ${i.code}`).toBe(true);
      const names = res.searchParam.map((p: any) => p.name);
      expect(new Set(names).size, `${res.type} searchParam names unique (cpb-12)`).toBe(names.length);
      for (const p of res.searchParam) expect(['token', 'reference', 'string', 'date', 'uri', 'number']).toContain(p.type);
    }
    const patient = rest.resource.find((x: any) => x.type === 'Patient');
    expect(patient.searchParam.map((p: any) => p.name)).toEqual(expect.arrayContaining(['_id', '_lastUpdated', 'identifier', 'name', 'birthdate']));
    expect(patient.operation).toEqual([
      { name: 'everything', definition: 'http://hl7.org/fhir/OperationDefinition/Patient-everything' },
      { name: 'validate', definition: 'http://hl7.org/fhir/OperationDefinition/Resource-validate' },
    ]);
    const basic = rest.resource.find((x: any) => x.type === 'Basic');
    expect(basic.operation).toEqual([{ name: 'validate', definition: 'http://hl7.org/fhir/OperationDefinition/Resource-validate' }]);
  });

  it('names the public base given by a trusted proxy (host and port apart, as our gateway sends them)', async () => {
    const r = await call(fhir.base, 'GET', 'metadata', undefined, {
      'x-forwarded-host': 'gw.example',
      'x-forwarded-port': '8443',
      'x-forwarded-proto': 'https',
      'x-forwarded-prefix': '/fhir-api-key-auth',
    });
    expect(r.body.implementation.url).toBe('https://gw.example:8443/fhir-api-key-auth');
  });

  it('omits default forwarded ports, keeps a port already in the host and ignores a bad port', async () => {
    const base = async (headers: Record<string, string>) =>
      (await call(fhir.base, 'GET', 'metadata', undefined, { 'x-forwarded-prefix': '/fhir-api', ...headers })).body.implementation.url;
    expect(await base({ 'x-forwarded-host': 'gw.example', 'x-forwarded-port': '443', 'x-forwarded-proto': 'https' })).toBe('https://gw.example/fhir-api');
    expect(await base({ 'x-forwarded-host': 'gw.example', 'x-forwarded-port': '80', 'x-forwarded-proto': 'http' })).toBe('http://gw.example/fhir-api');
    expect(await base({ 'x-forwarded-host': 'gw.example', 'x-forwarded-port': '443', 'x-forwarded-proto': 'http' })).toBe('http://gw.example:443/fhir-api');
    expect(await base({ 'x-forwarded-host': 'gw.example:9443', 'x-forwarded-port': '8443', 'x-forwarded-proto': 'https' })).toBe('https://gw.example:9443/fhir-api');
    expect(await base({ 'x-forwarded-host': '[::1]', 'x-forwarded-port': '8443', 'x-forwarded-proto': 'https' })).toBe('https://[::1]:8443/fhir-api');
    for (const port of ['0', '65536', '84a', '-1', '8443/evil']) {
      expect(await base({ 'x-forwarded-host': 'gw.example', 'x-forwarded-port': port, 'x-forwarded-proto': 'https' }), port).toBe('https://gw.example/fhir-api');
    }
  });

  it('serves JSON only: XML asked for → 406, XML sent → 415, both as OperationOutcome', async () => {
    for (const [path, headers] of [
      ['metadata?_format=xml', {}],
      ['metadata?_format=application/fhir%2Bxml', {}],
      ['metadata', { accept: 'application/fhir+xml' }],
    ] as const) {
      const r = await call(fhir.base, 'GET', path, undefined, headers);
      expect(r.status, path).toBe(406);
      expect(r.body.resourceType).toBe('OperationOutcome');
    }
    expect((await call(fhir.base, 'GET', 'metadata?_format=json')).status).toBe(200);
    const r = await call(fhir.base, 'POST', 'Patient', '<Patient xmlns="http://hl7.org/fhir"/>', { 'content-type': 'application/fhir+xml' });
    expect(r.status).toBe(415);
    expect(r.body.issue[0].severity).toBe('error');
    const count = await call(fhir.base, 'GET', 'Patient');
    expect(count.body.total).toBe(0);
  });

  it('answers unknown types and paths with an OperationOutcome 404', async () => {
    const r = await call(fhir.base, 'GET', 'NotAType/1');
    expect(r.status).toBe(404);
    expect(r.body.resourceType).toBe('OperationOutcome');
    expect(r.body.issue[0].code).toBe('not-found');
    expect((await call(fhir.base, 'GET', 'http://' + fhir.base.split('/')[2] + '/elsewhere')).status).toBe(404);
  });
});

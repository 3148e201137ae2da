/**
 * Issue 13: unsupported interactions answer 501 naming them (never 404 "unknown resource type"), the
 * CapabilityStatement lists exactly what works and is served from a cache, media types are handled one
 * way. Issue 12: empty search values do not match everything, history is paged.
 */
import { describe, expect, it } from 'vitest';
import * as capability from '../../../src/fhir/server/capability.js';
import { allPages, call, useFhirServer } from './helpers.js';

const fhir = useFhirServer();

describe('unsupported interactions', () => {
  const cases: Array<[string, string, string]> = [
    ['GET', '_history', 'system-level history'],
    ['GET', 'Patient/_history', 'type-level history'],
    ['GET', '$export', '$export'],
    ['GET', 'Patient/$export', 'Patient/$export'],
    ['POST', '$graphql', '$graphql'],
    ['GET', 'ValueSet/$expand?url=http://hl7.org/fhir/ValueSet/administrative-gender', 'ValueSet/$expand'],
    ['GET', 'Patient/$everything', 'type level'],
    ['GET', 'Patient/p1/$meta', '$meta'],
    ['POST', 'Patient/$meta-add', '$meta-add'],
    ['GET', 'Patient/p1/Observation', 'compartment search'],
    ['GET', '', 'system-level search'],
  ];
  it.each(cases)('%s /%s → 501 OperationOutcome naming the interaction', async (method, path, named) => {
    const r = await call(fhir.base, method, path, method === 'POST' ? { resourceType: 'Parameters' } : undefined);
    expect(r.status).toBe(501);
    expect(r.body.resourceType).toBe('OperationOutcome');
    expect(r.body.issue[0].code).toBe('not-supported');
    expect(r.body.issue[0].diagnostics).toContain(named);
    expect(r.body.issue[0].details.text).toBe('ERR_FHIR_NOT_SUPPORTED');
  });

  it('the CapabilityStatement lists exactly what works: no type or system history, no system search', async () => {
    const cs = (await call(fhir.base, 'GET', 'metadata')).body;
    const rest = cs.rest[0];
    expect(rest.interaction.map((i: any) => i.code).sort()).toEqual(['batch', 'transaction']);
    for (const r of rest.resource) {
      expect(r.interaction.map((i: any) => i.code).sort()).toEqual(['create', 'delete', 'history-instance', 'patch', 'read', 'search-type', 'update', 'vread']);
      expect(r.conditionalRead).toBe('not-supported');
      expect(r.operation.map((o: any) => o.name)).toEqual(r.type === 'Patient' ? ['everything', 'validate'] : ['validate']);
    }
    expect(rest.resource.map((r: any) => r.type)).toContain('OperationOutcome');
    expect(rest.resource.map((r: any) => r.type)).not.toContain('Parameters');
  });
});

describe('/metadata from a cache built once per start', () => {
  it('serializes the statement once per public base and answers with the same bytes and ETag', async () => {
    const before = capability.metadataBuilds();
    const a = await call(fhir.base, 'GET', 'metadata');
    const b = await call(fhir.base, 'GET', 'metadata');
    const c = await call(fhir.base, 'GET', 'metadata?_format=json');
    expect(capability.metadataBuilds() - before).toBeLessThanOrEqual(1);
    expect(a.headers.etag).toMatch(/^W\/".+"$/);
    expect(b.headers.etag).toBe(a.headers.etag);
    expect(c.body).toEqual(a.body);
    // another public base (the gateway's route) gets its own implementation.url
    const viaGateway = await call(fhir.base, 'GET', 'metadata', undefined, { 'x-forwarded-host': 'gw.example', 'x-forwarded-proto': 'https', 'x-forwarded-prefix': '/fhir-api' });
    expect(viaGateway.body.implementation.url).toBe('https://gw.example/fhir-api');
    expect(a.body.implementation.url).toBe(fhir.base);
  });
});

describe('media types: the legacy application/json+fhir is accepted everywhere', () => {
  it('in Accept, Content-Type and _format alike', async () => {
    const accept = await call(fhir.base, 'GET', 'metadata', undefined, { accept: 'application/json+fhir' });
    expect(accept.status).toBe(200);
    const created = await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient' }, { 'content-type': 'application/json+fhir', accept: 'application/json+fhir' });
    expect(created.status).toBe(201);
    const format = await call(fhir.base, 'GET', `Patient/${created.body.id}?_format=application/json%2Bfhir`, undefined, { accept: 'application/xml' });
    expect(format.status).toBe(200);
    expect((await call(fhir.base, 'GET', 'metadata', undefined, { accept: 'application/fhir+xml' })).status).toBe(406);
  });
});

describe('search values', () => {
  it('an empty value or alternative (name=, or name=,) is refused instead of matching everything', async () => {
    await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', name: [{ family: 'Somebody' }] });
    for (const q of ['name=,', 'name=a,', 'identifier=,', '_id=,', 'birthdate=,']) {
      const r = await call(fhir.base, 'GET', `Patient?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.issue[0].diagnostics, q).toContain('empty value');
    }
  });
});

describe('history is paged', () => {
  it('_count bounds a page, next links walk every version newest first, total counts them all', async () => {
    const created = (await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', gender: 'male' })).body;
    for (let i = 0; i < 6; i++) await call(fhir.base, 'PUT', `Patient/${created.id}`, { ...created, birthDate: `200${i}` });
    const first = await call(fhir.base, 'GET', `Patient/${created.id}/_history?_count=3`);
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(7);
    expect(first.body.entry).toHaveLength(3);
    const pages = await allPages(fhir.base, `Patient/${created.id}/_history?_count=3`);
    expect(pages).toHaveLength(3);
    expect(pages.flatMap((p) => p.entry.map((e: any) => e.response.etag))).toEqual(['7', '6', '5', '4', '3', '2', '1'].map((v) => `W/"${v}"`));
    const all = await call(fhir.base, 'GET', `Patient/${created.id}/_history`);
    expect(all.body.entry).toHaveLength(7);
    expect((await call(fhir.base, 'GET', `Patient/${created.id}/_history?_count=0`)).status).toBe(400);
  });
});

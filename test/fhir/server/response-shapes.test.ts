/**
 * Issue 13: every response shape the server produces is a valid R4 resource according to @medplum/core's
 * validateResource (with the R4 StructureDefinitions): metadata, searchset (with includes), history,
 * $everything, OperationOutcome (404, 400, 412, 501), transaction-response and batch-response.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningFhirServer } from '../../../src/fhir/server/start.js';
import { validationIssues } from '../../../src/fhir/validation/validate.js';
import { removeTempDirs } from '../../helpers/tmp.js';
import { call, startServer } from './helpers.js';

let server: RunningFhirServer;
let base: string;
beforeAll(async () => {
  server = await startServer();
  base = server.url;
});
afterAll(async () => {
  await server?.close();
  removeTempDirs();
});

function valid(what: string, body: any): void {
  expect(body?.resourceType, what).toBeTypeOf('string');
  const issues = validationIssues(body).map((i) => `${i.expression?.join(',')}: ${i.details?.text}`);
  expect(issues, what).toEqual([]);
}

describe('every response shape validates as R4', () => {
  it('metadata, searchset, history, $everything, transaction-response, batch-response and OperationOutcomes', async () => {
    valid('CapabilityStatement', (await call(base, 'GET', 'metadata')).body);

    const tx = await call(base, 'POST', '', { resourceType: 'Bundle', type: 'transaction', entry: [
      { fullUrl: 'urn:uuid:11111111-0000-4000-8000-000000000001', resource: { resourceType: 'Patient', identifier: [{ system: 'urn:s', value: 'shape' }], name: [{ family: 'Shape' }] }, request: { method: 'POST', url: 'Patient' } },
      { resource: { resourceType: 'Observation', status: 'final', code: { text: 'hr' }, subject: { reference: 'urn:uuid:11111111-0000-4000-8000-000000000001' } }, request: { method: 'POST', url: 'Observation' } },
      { request: { method: 'DELETE', url: 'Observation?identifier=urn:s|nothing-like-this' } },
      { request: { method: 'GET', url: 'Patient?identifier=urn:s|shape' } },
    ] });
    expect(tx.status, JSON.stringify(tx.body)).toBe(200);
    valid('transaction-response', tx.body);
    const patientId = tx.body.entry[0].response.location.split('/')[5];
    await call(base, 'PUT', `Patient/${patientId}`, { resourceType: 'Patient', id: patientId, name: [{ family: 'Shape2' }] });

    const batch = await call(base, 'POST', '', { resourceType: 'Bundle', type: 'batch', entry: [
      { request: { method: 'GET', url: `Patient/${patientId}` } },
      { request: { method: 'GET', url: 'Patient/missing' } },
      { resource: { resourceType: 'Patient', birthDate: 1 }, request: { method: 'POST', url: 'Patient' } },
      { request: { method: 'GET', url: '$export' } },
    ] });
    valid('batch-response', batch.body);

    valid('searchset', (await call(base, 'GET', `Observation?subject=Patient/${patientId}&_include=Observation:subject`)).body);
    valid('searchset (count)', (await call(base, 'GET', 'Patient?_summary=count')).body);
    valid('history', (await call(base, 'GET', `Patient/${patientId}/_history?_count=1`)).body);
    valid('$everything', (await call(base, 'GET', `Patient/${patientId}/$everything`)).body);
    valid('OperationOutcome 404', (await call(base, 'GET', 'Patient/missing')).body);
    valid('OperationOutcome 400 (validation)', (await call(base, 'POST', 'Patient', { resourceType: 'Patient', birthDate: 'x' })).body);
    valid('OperationOutcome 412', (await call(base, 'PUT', `Patient/${patientId}`, { resourceType: 'Patient', id: patientId }, { 'if-match': 'W/"99"' })).body);
    valid('OperationOutcome 501', (await call(base, 'GET', 'Patient/_history')).body);
    valid('OperationOutcome (delete)', (await call(base, 'DELETE', 'Patient/never')).body);
  }, 60_000);
});

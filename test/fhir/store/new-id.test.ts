/**
 * Server-given resource ids are UUID version 7 (RFC 9562 §5.7): R4 ids, distinct, and ordered by the time they
 * were made, so new rows land at the end of the id-keyed indexes (issue 28). The server's own creates use them.
 */
import { describe, expect, it } from 'vitest';
import { newResourceId } from '../../../src/fhir/store/new-id.js';
import { isR4Id } from '../../../src/fhir/validation/ids.js';
import { call, useFhirServer } from '../server/helpers.js';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const fhir = useFhirServer();

describe('new resource ids', () => {
  it('carry the time they were made in their first 48 bits, then version 7 and random bits', () => {
    const t = Date.UTC(2026, 10, 26, 22, 0, 0, 123);
    const id = newResourceId(t);
    expect(id).toMatch(V7);
    expect(isR4Id(id)).toBe(true);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(t);
  });

  it('sort in the order of the times they were made, and differ within one millisecond', () => {
    const times = Array.from({ length: 200 }, (_, i) => 1_700_000_000_000 + i * 7919);
    const ids = times.map((t) => newResourceId(t));
    expect([...ids].sort()).toEqual(ids);
    const sameMs = new Set(Array.from({ length: 10_000 }, () => newResourceId(1_700_000_000_000)));
    expect(sameMs.size).toBe(10_000);
  });

  it('are what the server gives a create and a transaction create', async () => {
    const created = await call(fhir.base, 'POST', 'Basic', { resourceType: 'Basic', code: { text: 'alone' } });
    expect(created.body.id).toMatch(V7);
    const tx = await call(fhir.base, 'POST', '', {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [{ resource: { resourceType: 'Basic', code: { text: 'in a Bundle' } }, request: { method: 'POST', url: 'Basic' } }],
    });
    expect(tx.body.entry[0].response.location).toMatch(/^.*\/Basic\/([0-9a-f-]{36})\/_history\/1$/);
    expect(/\/Basic\/([0-9a-f-]{36})\//.exec(tx.body.entry[0].response.location)![1]).toMatch(V7);
  });
});

/**
 * Text that is not Unicode (issue 45): a lone surrogate or bytes that are not UTF-8, in a search, a
 * path, a body or a transaction entry's URL, is refused with a 400 OperationOutcome and stores nothing.
 * Before, a query's `%FF` became U+FFFD and matched a value stored from a lone `\ud800` escape.
 */
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { call, useFhirServer } from './helpers.js';

const f = useFhirServer();

async function count(query: string): Promise<number> {
  return (await call(f.base, 'GET', `Patient?${query}&_summary=count`)).body.total as number;
}

describe('text that is not Unicode', () => {
  it.each([
    ['a lone high surrogate (UTF-8 of U+D800)', 'identifier=s|a%ED%A0%80'],
    ['a byte that is never UTF-8', 'identifier=s|a%FF'],
    ['a cut UTF-8 sequence', 'name=%C3'],
    ['a bad name', 'na%FFme=x'],
  ])('refuses a search whose value holds %s with 400 ERR_FHIR_INVALID_SEARCH', async (_what, query) => {
    const r = await call(f.base, 'GET', `Patient?${query}`);
    expect(r.status).toBe(400);
    expect(r.body.resourceType).toBe('OperationOutcome');
    expect(r.body.issue[0].details.text).toBe('ERR_FHIR_INVALID_SEARCH');
    expect(r.body.issue[0].diagnostics).toContain('not UTF-8');
  });

  it('refuses the same in a POST _search form body', async () => {
    const r = await call(f.base, 'POST', 'Patient/_search', 'identifier=s|a%FF', { 'content-type': 'application/x-www-form-urlencoded' });
    expect([r.status, r.body.issue[0].details.text]).toEqual([400, 'ERR_FHIR_INVALID_SEARCH']);
  });

  it('still finds a value with a real U+FFFD, and one with a character outside the BMP', async () => {
    for (const value of ['b\uFFFD', 'c\u{1F600}']) {
      const created = await call(f.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: 'urn:t:u', value }] });
      expect(created.status).toBe(201);
      expect(await count(`identifier=${encodeURIComponent(`urn:t:u|${value}`)}`)).toBe(1);
    }
  });

  it('answers a path that is not UTF-8 with an OperationOutcome', async () => {
    const r = await call(f.base, 'GET', 'Patient/%ED%A0%80');
    expect(r.status).toBe(400);
    expect(r.body.resourceType).toBe('OperationOutcome');
  });

  it.each([
    ['a lone high surrogate', '"a\\ud800"'],
    ['a lone low surrogate', '"\\uDC00a"'],
    ['a reversed pair', '"\\udc00\\ud800"'],
  ])('refuses a resource with %s in a string, and stores nothing', async (_what, json) => {
    const body = `{"resourceType":"Patient","identifier":[{"system":"urn:t:lone","value":${json}}]}`;
    const r = await call(f.base, 'POST', 'Patient', body);
    expect(r.status).toBe(400);
    expect(r.body.issue[0].details.text).toBe('ERR_FHIR_INVALID_REQUEST');
    expect(r.body.issue[0].diagnostics).toContain('lone surrogate');
    expect(await count('identifier=urn:t:lone|')).toBe(0);
  });

  it('refuses a lone surrogate inside a transaction entry, and stores nothing', async () => {
    const entry = (v: string) => `{"resource":{"resourceType":"Patient","identifier":[{"system":"urn:t:lone","value":"${v}"}]},"request":{"method":"POST","url":"Patient"}}`;
    const body = `{"resourceType":"Bundle","type":"transaction","entry":[${entry('fine')},${entry('x\\ud800')}]}`;
    const r = await call(f.base, 'POST', '', body);
    expect(r.status).toBe(400);
    expect(await count('identifier=urn:t:lone|')).toBe(0);
  });

  it('refuses a body whose bytes are not UTF-8', async () => {
    const body = Buffer.concat([Buffer.from('{"resourceType":"Patient","identifier":[{"system":"urn:t:lone","value":"a'), Buffer.from([0xff]), Buffer.from('"}]}')]);
    const res = await request(`${f.base}/Patient`, { method: 'POST', headers: { 'content-type': 'application/fhir+json' }, body });
    const oo = (await res.body.json()) as any;
    expect([res.statusCode, oo.issue[0].details.text]).toEqual([400, 'ERR_FHIR_INVALID_REQUEST']);
    expect(oo.issue[0].diagnostics).toContain('not UTF-8');
    expect(await count('identifier=urn:t:lone|')).toBe(0);
  });

  it('keeps an escaped backslash before "ud800" (no surrogate at all)', async () => {
    const r = await call(f.base, 'POST', 'Patient', '{"resourceType":"Patient","identifier":[{"system":"urn:t:bs","value":"\\\\ud800"}]}');
    expect(r.status).toBe(201);
    expect(r.body.identifier[0].value).toBe('\\ud800');
  });
});

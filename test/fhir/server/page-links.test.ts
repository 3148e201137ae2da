/**
 * Issue 49: a search page's links are written without building a URLSearchParams (server/bundle.ts pageLink), and
 * must be its bytes exactly: the application/x-www-form-urlencoded serializer's escapes, a space as %20, `_cursor`
 * set once, a lone surrogate as U+FFFD.
 */
import { describe, expect, it } from 'vitest';
import { pageLink } from '../../../src/fhir/server/bundle.js';
import { call, ids, useFhirServer } from './helpers.js';

/** The links as they were written before issue 49, through URLSearchParams. */
function viaSearchParams(base: string, path: string, params: Array<[string, string]>, cursor?: string | null): string {
  const q = new URLSearchParams(params);
  if (cursor) q.set('_cursor', cursor);
  const query = q.toString().replace(/\+/g, '%20');
  return `${base}/${path}${query ? `?${query}` : ''}`;
}

const fhir = useFhirServer();

describe('search page links', () => {
  it('are the bytes URLSearchParams writes, for every character and with or without a cursor', () => {
    let everyChar = '';
    for (let c = 0; c < 0x800; c++) everyChar += String.fromCharCode(c);
    const values = [everyChar, "a b+c!*'()~-._", '\u{1F600}|\u{10FFFF}', '\uD800', 'x\uDC00y', '', '=&?#%/\\,|$'];
    let compared = 0;
    for (const v of values) {
      for (const params of [[['identifier', v]], [[v, v], ['_count', '2']], [], [['_cursor', 'old'], ['name', v]]] as Array<Array<[string, string]>>) {
        for (const cursor of [undefined, null, '', 'eyJhIjoxfQ', v]) {
          expect(pageLink('https://h/fhir', 'Patient', params, cursor)).toBe(viaSearchParams('https://h/fhir', 'Patient', params, cursor));
          compared++;
        }
      }
    }
    expect(compared).toBe(140);
  });

  it('lead back to the same page: a self link of a value with escapes, spaces and non-ASCII letters', async () => {
    const value = "urn:t:links|a b!'(x)~*\\,ü";
    const made = await call(fhir.base, 'POST', 'Patient', { resourceType: 'Patient', identifier: [{ system: 'urn:t:links', value: "a b!'(x)~*,ü" }] });
    expect(made.status).toBe(201);
    const page = (await call(fhir.base, 'GET', `Patient?identifier=${encodeURIComponent(value)}&_count=5`)).body;
    expect(ids(page)).toEqual([`Patient/${made.body.id}`]);
    const self = page.link.find((l: { relation: string }) => l.relation === 'self').url as string;
    expect(self).toBe(viaSearchParams(fhir.base, 'Patient', [['identifier', value], ['_count', '5']]));
    expect(ids((await call(fhir.base, 'GET', self)).body)).toEqual([`Patient/${made.body.id}`]);
  });
});

/**
 * Issue 49: a first search page with one index condition and no `_sort` reads the matching rids from the index
 * and then their rows (search/execute.ts byIndex). Its pages must be the general query's: every match once, in
 * the same order, with the same next links, also when one resource matches several of the condition's values.
 */
import { describe, expect, it } from 'vitest';
import { allPages, call, ids, useFhirServer } from './helpers.js';

const f = useFhirServer();

describe('one-condition searches answered from the index', () => {
  it('pages through a resource matching two of the values once, and the others after it', async () => {
    const made: string[] = [];
    const identifiers = [
      [{ system: 'urn:t:bi', value: 'a' }, { system: 'urn:t:bi', value: 'b' }],
      [{ system: 'urn:t:bi', value: 'b' }],
      [{ system: 'urn:t:bi', value: 'a' }],
    ];
    for (const identifier of identifiers) {
      const r = await call(f.base, 'POST', 'Patient', { resourceType: 'Patient', identifier });
      expect(r.status).toBe(201);
      made.push(`Patient/${r.body.id}`);
    }
    const query = `Patient?identifier=${encodeURIComponent('urn:t:bi|a,urn:t:bi|b')}`;
    const pages = await allPages(f.base, `${query}&_count=1`);
    expect(pages.map(ids)).toEqual(made.map((m) => [m]));
    const one = (await call(f.base, 'GET', query)).body;
    expect([ids(one), one.total]).toEqual([made, 3]);
    // a deleted resource has no index rows left: it is not found
    expect((await call(f.base, 'DELETE', made[1] as string)).status).toBeLessThan(300);
    expect(ids((await call(f.base, 'GET', query)).body)).toEqual([made[0], made[2]]);
  });
});

/**
 * Issue 28: the API's memory is bounded by what is in flight, not by the
 * record. The de-duplication set keeps one key per resource for the whole
 * answer, so a key must be the fullUrl alone, not a string that holds on to
 * the entry's text (a regex capture on a decoded head of the entry did: the
 * record's text stayed on the heap until the answer ended). Measured in bytes
 * of heap still in use after a full GC, with only the keys kept.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { scanPage } from '../../src/api/fhir/page-scan.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A page of `count` entries of about `entryBytes` each, fullUrl first (as HAPI writes it). */
function page(count: number, entryBytes: number, from: number): Buffer {
  const entries: string[] = [];
  for (let i = from; i < from + count; i++) {
    const filler = 'x'.repeat(entryBytes);
    entries.push(`{"fullUrl":"https://fhir.test/fhir/Observation/o${i}","resource":{"resourceType":"Observation","id":"o${i}","note":"${filler}"}}`);
  }
  return Buffer.from(`{"resourceType":"Bundle","type":"searchset","entry":[${entries.join(',')}]}`);
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe('the keys kept for de-duplication', () => {
  it('hold the fullUrl only, not the entry text', () => {
    const PAGES = 8;
    const PER_PAGE = 500;
    const ENTRY = 1500;
    const keys = new Set<string>();
    const before = heapUsed();
    for (let p = 0; p < PAGES; p++) {
      // Each page is dropped after its scan, as the page loop drops it once written.
      for (const e of scanPage(page(PER_PAGE, ENTRY, p * PER_PAGE)).entries) keys.add(e.key as string);
    }
    const retained = heapUsed() - before;
    expect(keys.size).toBe(PAGES * PER_PAGE);
    expect([...keys][0]).toBe('"https://fhir.test/fhir/Observation/o0"');
    // 4,000 keys of ~40 characters: well under 1 MB; entry text kept alive would be ~4 MB (4,000 × ~1 KB head).
    expect(retained).toBeLessThan(1024 * 1024);
  });

  it('reads a fullUrl written first as sent (escapes kept), however long, and others by parsing', () => {
    const long = `https://fhir.test/${'a'.repeat(3000)}`;
    const text =
      '{"resourceType":"Bundle","entry":[' +
      `{ "fullUrl" : "urn:x:\\"q\\"", "resource":{"resourceType":"A","id":"1"}},` +
      `{"fullUrl":"${long}","resource":{"resourceType":"A","id":"2"}},` +
      '{"resource":{"resourceType":"B","id":"3"},"fullUrl":"urn:later"},' +
      '{"resource":{"resourceType":"C","id":"4"}}]}';
    expect(scanPage(Buffer.from(text)).entries.map((e) => e.key)).toEqual(['"urn:x:\\"q\\""', `"${long}"`, '"urn:later"', 'C/4']);
  });
});

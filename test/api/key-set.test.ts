/**
 * The record's de-duplication set (src/api/fhir/key-set.ts): exact, whatever its
 * hash does. A key is new unless the same bytes were added before.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KeySet } from '../../src/api/fhir/key-set.js';

const bytes = (s: string) => Buffer.from(s, 'utf8');

describe('KeySet', () => {
  it('tells a key seen before from a new one, by its bytes, wherever they sit in the page', () => {
    const set = new KeySet();
    const page = bytes('xx"urn:a"yy"urn:a"zz"urn:ab""urn:a');
    expect(set.add(page, 2, 9)).toBe(true); // "urn:a"
    expect(set.add(page, 11, 18)).toBe(false); // the same bytes elsewhere
    expect(set.add(page, 20, 28)).toBe(true); // "urn:ab": a longer key with the same start
    expect(set.add(page, 28, 34)).toBe(true); // "urn:a without its closing quote
    expect(set.addText('"urn:a"')).toBe(false);
    expect(set.addText('"ü"')).toBe(true);
    expect(set.add(bytes('"ü"'), 0, 4)).toBe(false); // text is added as its UTF-8 bytes
    expect(set.size).toBe(4);
  });

  it('keeps 300,000 distinct keys of one length apart, though some share their 32-bit hash', () => {
    // 300,000 random keys give about 10 pairs with equal hashes (n²/2³³, P(none) ≈ e⁻¹⁰): only the byte
    // comparison tells them apart. (Random 16-byte keys repeat with probability ~n²/2¹²⁹: never.)
    const set = new KeySet();
    const n = 300_000;
    const keys = randomBytes(16 * n);
    let fresh = 0;
    for (let i = 0; i < n; i++) if (set.add(keys, 16 * i, 16 * i + 16)) fresh++;
    expect(fresh).toBe(n);
    let again = 0;
    for (let i = 0; i < n; i += 7) if (!set.add(Buffer.from(keys.subarray(16 * i, 16 * i + 16)), 0, 16)) again++;
    expect(again).toBe(Math.ceil(n / 7));
    expect(set.size).toBe(n);
  });
});

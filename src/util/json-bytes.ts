/**
 * Reading JSON's structure from its UTF-8 bytes without parsing it: the structural characters are
 * ASCII, and UTF-8 never reuses an ASCII byte inside a multi-byte character
 * (https://www.rfc-editor.org/rfc/rfc3629#section-3), so a byte that looks like `"` or `{` is one.
 * Shared by the Hospital API's $everything page scan and the FHIR server's body parser.
 */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_OBJ = 0x7b;
export const CLOSE_OBJ = 0x7d;
export const OPEN_ARR = 0x5b;
export const CLOSE_ARR = 0x5d;
export const COMMA = 0x2c;
export const COLON = 0x3a;

/** The index of the first byte at or after `i` that is not JSON whitespace (RFC 8259 §2). */
export function skipWs(b: Uint8Array, i: number): number {
  let c = b[i];
  while (c === 32 || c === 10 || c === 13 || c === 9) c = b[++i];
  return i;
}

/** For the string whose opening quote is at `i`: the index just past its closing quote, or -1 if it has none. */
export function stringEnd(b: Buffer, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, j);
    if (q < 0) return -1;
    let k = q - 1;
    while (b[k] === BACKSLASH) k--;
    // an even number of backslashes before the quote escape each other, not the quote
    if ((q - 1 - k) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

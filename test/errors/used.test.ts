/**
 * Every error code docs/errors.md documents is one the code can raise: a code
 * in the registry that no module under src/ (outside the tables) raises or
 * records is a documented error nobody will ever see, so it goes (issue 11).
 * A code named only in a comment, or only compared against (`code === 'ERR_X'`,
 * `case 'ERR_X':`), does not count: that reads an error, it never produces one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { registry } from '../../src/errors/registry.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Source text without comments (block comments, and `//` comments that follow a blank or start a line). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1');
}

function sources(): string {
  return readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !join(e.parentPath, e.name).startsWith(join(SRC, 'errors')))
    .map((e) => withoutComments(readFileSync(join(e.parentPath, e.name), 'utf8')))
    .join('\n');
}

/** True when `text` has `code` as a string literal that is not the right-hand side of a comparison or a `case` label. */
function raises(text: string, code: string): boolean {
  const literal = new RegExp(`(?<!(?:[!=]==?|\\bcase)\\s*)['"\`]${code}['"\`]`);
  return literal.test(text);
}

describe('error registry', () => {
  it('holds no code that nothing under src/ raises or records', () => {
    const text = sources();
    const unused = Object.keys(registry).filter((code) => !raises(text, code));
    expect(unused).toEqual([]);
  });

  it('does not count a code that is only mentioned in a comment or only compared against', () => {
    expect(raises(withoutComments("// throws 'ERR_X' when ...\n/* or 'ERR_X' */ const a = 1;"), 'ERR_X')).toBe(false);
    expect(raises("if (e.code === 'ERR_X' || e.code !== \"ERR_X\") {} switch (c) { case 'ERR_X': }", 'ERR_X')).toBe(false);
    expect(raises("throw new HospitalApiError('ERR_X', {});", 'ERR_X')).toBe(true);
    expect(raises("st.code = aborted ? 'ERR_X' : null; const url = 'http://h/x'; // 'ERR_Y'", 'ERR_X')).toBe(true);
    expect(raises(withoutComments("const url = 'http://h/x'; const c = 'ERR_X';"), 'ERR_X')).toBe(true);
  });
});

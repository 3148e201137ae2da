/**
 * Every error code docs/errors.md documents is one the code can raise: a code
 * in the registry that no module under src/ (outside the tables) names is a
 * documented error nobody will ever see, so it goes (issue 11).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { registry } from '../../src/errors/registry.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function sources(): string {
  return readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !join(e.parentPath, e.name).startsWith(join(SRC, 'errors')))
    .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'))
    .join('\n');
}

describe('error registry', () => {
  it('holds no code that nothing under src/ raises or names', () => {
    const text = sources();
    const unused = Object.keys(registry).filter((code) => !new RegExp(`['"\`]${code}['"\`]`).test(text));
    expect(unused).toEqual([]);
  });
});

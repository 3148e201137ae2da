/**
 * Issue 44: acceptance is in one place with one entry. Outside src/checks/ (the design card's
 * folder, which holds the verify run, the checks and the signed record), every import of it goes
 * through src/checks/index.ts; and src/ has exactly one file named verify.ts (the `verify` command),
 * so a name says what a file does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const ENTRY = join(SRC, 'checks', 'index.ts');
const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** `file:line → target` for each import in `text` (of `file`) that reaches into src/checks/ past its entry. */
function bypasses(file: string, text: string): string[] {
  if (file.startsWith(join(SRC, 'checks') + sep)) return [];
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(IMPORT)) {
      const target = resolve(dirname(file), m[1]!).replace(/\.js$/, '.ts');
      if (target.startsWith(join(SRC, 'checks') + sep) && target !== ENTRY) out.push(`src/${relative(SRC, file)}:${i + 1} → ${m[1]}`);
    }
  });
  return out;
}

describe('acceptance has one entry', () => {
  it('nothing outside src/checks/ imports its files but index.ts', () => {
    const found = sourceFiles().flatMap((f) => bypasses(f, readFileSync(f, 'utf8')));
    expect(found, `import from src/checks/index.js instead:\n${found.join('\n')}`).toEqual([]);
  });

  it('flags what it is for: a direct import from outside, not the entry nor an import inside', () => {
    const outside = join(SRC, 'commands', 'x.ts');
    expect(bypasses(outside, "const { runVerify } = await import('../checks/run.js');")).toHaveLength(1);
    expect(bypasses(outside, "import { diffRecords } from '../checks/record/diff.js';")).toHaveLength(1);
    expect(bypasses(outside, "import { runVerify } from '../checks/index.js';")).toEqual([]);
    expect(bypasses(join(SRC, 'checks', 'run.ts'), "import { CHECKS } from './list.js';")).toEqual([]);
  });

  it('src/ has exactly one file named verify.ts: the verify command', () => {
    const named = sourceFiles().filter((f) => f.endsWith(`${sep}verify.ts`)).map((f) => relative(SRC, f).split(sep).join('/'));
    expect(named).toEqual(['commands/verify.ts']);
  });
});

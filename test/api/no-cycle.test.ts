/**
 * src/api has no import cycle (issue 25): app → routes → the pieces they use,
 * never back. A static scan of every import and re-export between its files,
 * type-only ones included (a cycle of types is still two files that cannot be
 * read one before the other), then a depth-first search for a cycle.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../src/api', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The files of `dir` each file imports (relative specifiers only; `x.js` is the source `x.ts`). */
function importGraph(dir: string): Map<string, string[]> {
  const files = sources(dir);
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const specifiers = [
      ...text.matchAll(/^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]/gms),
      ...text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm),
      ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
    ].map((m) => m[1] as string);
    const targets = specifiers
      .filter((s) => s.startsWith('.'))
      .map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')))
      .filter((t) => known.has(t));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The first cycle found, as the files around it (first file repeated at the end), or null. */
function findCycle(graph: Map<string, string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | null => {
    state.set(file, 'open');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') return [...path.slice(path.indexOf(next)), next];
      if (state.get(next) === undefined) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(file, 'done');
    return null;
  };
  for (const file of [...graph.keys()].sort()) {
    if (state.get(file) === undefined) {
      const found = visit(file);
      if (found) return found;
    }
  }
  return null;
}

describe('the import graph of src/api', () => {
  it('has no cycle', () => {
    const graph = importGraph(root);
    expect(graph.size).toBeGreaterThan(10); // the scan sees the folder
    expect(graph.get(join(root, 'server/app.ts'))).toContain(join(root, 'routes/patients.ts')); // and its imports
    const cycle = findCycle(graph);
    expect(cycle?.map((f) => relative(root, f)).join(' → ') ?? null).toBeNull();
  });

  it('finds a cycle when there is one', () => {
    const a = '/x/a.ts';
    const b = '/x/b.ts';
    const c = '/x/c.ts';
    expect(findCycle(new Map([[a, [b]], [b, [c]], [c, []]]))).toBeNull();
    expect(findCycle(new Map([[a, [b]], [b, [c]], [c, [a]]]))).toEqual([a, b, c, a]);
  });
});

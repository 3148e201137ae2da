/**
 * The import rules of docs/architecture.md ("Import rules"), kept: every import in
 * src/ (static, dynamic and type-only) between two top-level folders must be one
 * the importing folder's row allows, every folder must have a row, and the rules
 * themselves must have no cycle. The table is read from the document, so the
 * document and the test cannot drift apart.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');

/** `folder → folders it may import`, from the table under "## Import rules". */
function parseRules(markdown: string): Map<string, Set<string>> {
  const start = markdown.indexOf('\n## Import rules');
  if (start < 0) throw new Error('docs/architecture.md has no "## Import rules" section');
  const end = markdown.indexOf('\n## ', start + 1);
  const rules = new Map<string, Set<string>>();
  for (const line of markdown.slice(start, end < 0 ? undefined : end).split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    // | `folder` | `a`, `b` |  →  ['', '`folder`', '`a`, `b`', '']
    if (cells.length !== 4 || !/^`[a-z-]+`$/.test(cells[1] ?? '')) continue;
    const allowed = [...(cells[2] ?? '').matchAll(/`([a-z-]+)`/g)].map((m) => m[1] as string);
    rules.set((cells[1] as string).slice(1, -1), new Set(allowed));
  }
  return rules;
}

interface ImportEdge {
  file: string;
  line: number;
  from: string;
  to: string;
}

/** The top-level unit of a path under src/: its folder, or a root file's name without `.ts`. */
function unitOf(path: string): string {
  const first = relative(SRC, path).split(sep)[0] as string;
  return first.replace(/\.(ts|js|json)$/, '');
}

/** Every relative import in src/ that leaves its own top-level folder. */
function crossFolderImports(): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const entry of readdirSync(SRC, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const from = unitOf(file);
    readFileSync(file, 'utf8').split('\n').forEach((text, i) => {
      // from '…' (static and type-only imports, re-exports), import('…'), import '…'
      for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)) {
        const target = resolve(dirname(file), m[1] as string);
        if (!target.startsWith(SRC + sep)) continue;
        const to = unitOf(target);
        if (to !== from) edges.push({ file: relative(ROOT, file), line: i + 1, from, to });
      }
    });
  }
  return edges;
}

/** Units of src/ (folders, and root files such as cli.ts and version.ts). */
function units(): string[] {
  return readdirSync(SRC, { withFileTypes: true })
    .filter((e) => e.isDirectory() || e.name.endsWith('.ts'))
    .map((e) => e.name.replace(/\.ts$/, ''));
}

/** A cycle in the rules, as a path `a → b → … → a`, or null. */
function ruleCycle(rules: Map<string, Set<string>>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | null => {
    if (state.get(node) === 'done') return null;
    if (state.get(node) === 'open') return [...path.slice(path.indexOf(node)), node];
    state.set(node, 'open');
    path.push(node);
    for (const next of rules.get(node) ?? []) {
      const found = visit(next);
      if (found) return found;
    }
    path.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of rules.keys()) {
    const found = visit(node);
    if (found) return found;
  }
  return null;
}

const rules = parseRules(readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8'));

describe('import rules (docs/architecture.md)', () => {
  it('has a row for every folder of src/, and none for a folder that does not exist', () => {
    const present = units();
    expect(present.filter((u) => !rules.has(u)), 'folders without a row').toEqual([]);
    expect([...rules.keys()].filter((u) => !present.includes(u)), 'rows without a folder').toEqual([]);
  });

  it('allows only folders that have a row, and has no cycle', () => {
    const unknown = [...rules].flatMap(([folder, allowed]) => [...allowed].filter((a) => !rules.has(a)).map((a) => `${folder} → ${a}`));
    expect(unknown).toEqual([]);
    expect(ruleCycle(rules)).toBeNull();
  });

  it('every import in src/ between folders is one its folder may make', () => {
    const edges = crossFolderImports();
    // the scan must see the imports it judges: a broken pattern would pass any tree
    expect(edges.some((e) => e.from === 'commands' && e.to === 'runtime')).toBe(true);
    expect(edges.some((e) => e.from === 'runtime' && e.to === 'install-dir')).toBe(true);
    const crossing = edges.filter((e) => !rules.get(e.from)?.has(e.to)).map((e) => `${e.file}:${e.line} (${e.from} → ${e.to})`);
    expect(crossing).toEqual([]);
  });
});

describe('the checker itself', () => {
  it('reads a rule table and finds a cycle in one', () => {
    const table = '# x\n\n## Import rules\n\n| folder | may import |\n|---|---|\n| `a` | `b` |\n| `b` | |\n\n## Next\n| `c` | `a` |\n';
    const parsed = parseRules(table);
    expect([...parsed.keys()]).toEqual(['a', 'b']);
    expect([...(parsed.get('a') ?? [])]).toEqual(['b']);
    expect(ruleCycle(parsed)).toBeNull();
    parsed.get('b')?.add('a');
    expect(ruleCycle(parsed)).toEqual(['a', 'b', 'a']);
  });
});

/**
 * The import rules of docs/architecture.md ("Import rules"), kept: every import in
 * src/ (static, dynamic and type-only) between two top-level folders must be one
 * the importing folder's row allows, every folder must have a row, and the rules
 * themselves must have no cycle. The table is read from the document, so the
 * document and the test cannot drift apart. The same holds one floor down, between
 * the folders of src/runtime/ ("Import rules inside runtime/", issue 44): docker/ and
 * swarm/ share container/ and import nothing of each other.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SRC = join(ROOT, 'src');

/** `folder → folders it may import`, from the table under "## <heading>". */
function parseRules(markdown: string, heading = 'Import rules'): Map<string, Set<string>> {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/architecture.md has no "## ${heading}" section`);
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

const RUNTIME = join(SRC, 'runtime');

/** The folder of src/runtime/ a path is in, or null for the seam's own files (src/runtime/*.ts) and paths outside. */
function runtimeFolderOf(path: string): string | null {
  const parts = relative(RUNTIME, path).split(sep);
  return parts.length > 1 && parts[0] !== '..' ? (parts[0] as string) : null;
}

/** `file:line (from → to)` for each import in `text` (of `file`) from one folder of src/runtime/ into another that `rules` does not allow. */
function runtimeCrossings(file: string, text: string, rules: Map<string, Set<string>>): string[] {
  const from = runtimeFolderOf(file);
  if (from === null) return [];
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const to = runtimeFolderOf(resolve(dirname(file), m[1] as string));
      if (to !== null && to !== from && !rules.get(from)?.has(to)) out.push(`${relative(ROOT, file)}:${i + 1} (${from} → ${to})`);
    }
  });
  return out;
}

/** The folders of src/runtime/. */
function runtimeFolders(): string[] {
  return readdirSync(RUNTIME, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
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

const architecture = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
const rules = parseRules(architecture);
const runtimeRules = parseRules(architecture, 'Import rules inside runtime/');

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

describe('import rules inside src/runtime/ (docs/architecture.md)', () => {
  it('has a row for every folder of src/runtime/, none for a folder that does not exist, and no cycle', () => {
    const present = runtimeFolders();
    expect(present.filter((u) => !runtimeRules.has(u)), 'folders without a row').toEqual([]);
    expect([...runtimeRules.keys()].filter((u) => !present.includes(u)), 'rows without a folder').toEqual([]);
    expect(ruleCycle(runtimeRules)).toBeNull();
  });

  it('docker/ and swarm/ import nothing of each other: what both need is in container/', () => {
    expect(runtimeRules.get('docker')?.has('swarm')).toBe(false);
    expect(runtimeRules.get('swarm')?.has('docker')).toBe(false);
    expect(runtimeRules.get('docker')?.has('container')).toBe(true);
    expect(runtimeRules.get('swarm')?.has('container')).toBe(true);
  });

  it('every import between two folders of src/runtime/ is one its folder may make', () => {
    const files = readdirSync(RUNTIME, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .map((e) => join(e.parentPath, e.name));
    const found = files.flatMap((f) => runtimeCrossings(f, readFileSync(f, 'utf8'), runtimeRules));
    expect(found).toEqual([]);
  });
});

describe('the checker itself', () => {
  it('flags an import between two runtime folders the rules do not allow, and not the seam\'s own files', () => {
    const table = new Map([['docker', new Set(['container'])], ['swarm', new Set(['container'])], ['container', new Set<string>()]]);
    const swarm = join(RUNTIME, 'swarm', 'x.ts');
    expect(runtimeCrossings(swarm, "import { IMAGES } from '../docker/render.js';", table)).toHaveLength(1);
    expect(runtimeCrossings(join(RUNTIME, 'docker', 'x.ts'), "const { f } = await import('../swarm/render.js');", table)).toHaveLength(1);
    expect(runtimeCrossings(swarm, "import type { DockerCli } from '../container/compose.js';", table)).toEqual([]);
    expect(runtimeCrossings(swarm, "import type { Runtime } from '../types.js';", table)).toEqual([]);
    expect(runtimeCrossings(join(RUNTIME, 'container', 'x.ts'), "import { f } from '../docker/render.js';", table)).toHaveLength(1);
    expect(runtimeCrossings(join(RUNTIME, 'index.ts'), "import { f } from './docker/index.js';", table)).toEqual([]);
  });

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

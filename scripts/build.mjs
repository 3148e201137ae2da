#!/usr/bin/env node
// `npm run build`: compile src/ to dist/ with tsc, then copy the JSON data files the
// compiled modules read next to them (tsc emits only what is imported as code).
// A failed compile leaves the previous dist/ in place and exits non-zero.
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const next = join(root, 'dist.next');
const dist = join(root, 'dist');

rmSync(next, { recursive: true, force: true });
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', next], { stdio: 'inherit' });
} catch {
  rmSync(next, { recursive: true, force: true });
  process.exit(1);
}
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.json')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(next, relative(src, from)));
}
rmSync(dist, { recursive: true, force: true });
renameSync(next, dist);

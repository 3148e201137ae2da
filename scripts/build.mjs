#!/usr/bin/env node
// `npm run build`: compile src/ to dist/ with tsc, then copy the JSON data files the
// compiled modules read next to them (tsc emits only what is imported as code), then
// bundle the CLI's entry (see bundleCliEntry). A failed step leaves the previous dist/
// in place and exits non-zero.
import { build } from 'esbuild';
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
try {
  await bundleCliEntry(join(next, 'cli.js'));
} catch (err) {
  process.stderr.write(`build: bundling dist/cli.js failed: ${err instanceof Error ? err.message : String(err)}\n`);
  rmSync(next, { recursive: true, force: true });
  process.exit(1);
}
rmSync(dist, { recursive: true, force: true });
renameSync(next, dist);

/**
 * Every CLI run loads dist/cli.js, commander and the command list before anything
 * else; as separate modules that is about a dozen files resolved and linked, with
 * commander's CommonJS going through Node's ESM-to-CJS translation. One bundled
 * file in their place takes about a fifth off `hospital-api --help` (measured with
 * `npm run bench -- startup`). Only that entry is bundled: each command module stays
 * its own file in dist/commands/, still loaded lazily by commands/index.js (its
 * dynamic imports are kept, re-pointed from the bundle's folder), so a command
 * pays only for itself. Commands that need commander's classes get them from the
 * program they are given (program.createOption), never from a second copy.
 */
async function bundleCliEntry(entry) {
  await build({
    entryPoints: [entry],
    outfile: entry,
    allowOverwrite: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    sourcemap: true,
    logLevel: 'warning',
    // commander is CommonJS: its require() calls of node: built-ins need a require in ESM.
    banner: { js: "import { createRequire as hospitalApiCreateRequire } from 'node:module';\nconst require = hospitalApiCreateRequire(import.meta.url);" },
    plugins: [
      {
        name: 'lazy-command-modules',
        setup(b) {
          b.onResolve({ filter: /.*/ }, (args) => {
            if (args.kind !== 'dynamic-import') return undefined;
            if (!args.importer.endsWith(join('commands', 'index.js')) || !/^\.\/[a-z0-9-]+\.js$/.test(args.path)) {
              throw new Error(`unexpected dynamic import ${args.path} in ${args.importer}: only commands/index.js loads modules lazily`);
            }
            return { path: `./commands/${args.path.slice(2)}`, external: true };
          });
        },
      },
    ],
  });
}

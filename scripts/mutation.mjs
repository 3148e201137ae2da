#!/usr/bin/env node
// `npm run mutation [-- <target>...]`: StrykerJS over the code that decides (issue 11),
// one target at a time (2 shared cores), then the mutation score per folder from
// Stryker's JSON reports (reports/mutation/<target>.json). Not part of `npm test`.
// Score = (killed + timed out) / (killed + timed out + survived + no coverage),
// Stryker's own definition; compile errors and ignored mutants do not count.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GROUPS, TARGETS } from '../stryker.config.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const reportOnly = args.includes('--report-only');
const asked = args.filter((a) => !a.startsWith('--'));
const targets = (asked.length ? asked : Object.keys(TARGETS)).flatMap((t) => GROUPS[t] ?? [t]);
for (const t of targets) if (!TARGETS[t]) {
  console.error(`unknown target ${t}; known: ${[...Object.keys(TARGETS), ...Object.keys(GROUPS)].join(', ')}`);
  process.exit(2);
}

/** The folder a file's score is reported under: the issue's folders, single files by name. */
function folderOf(file) {
  const f = file.replace(/\\/g, '/');
  for (const [re, name] of [
    [/^src\/checks\/record\//, 'src/checks/record/'],
    [/^src\/checks\//, 'src/checks/'],
    [/^src\/api\/routes\//, 'src/api/routes/'],
    [/^src\/gateway\/plugins\/key-auth\//, 'src/gateway/plugins/key-auth/'],
    [/^src\/gateway\/plugins\/basic-auth\//, 'src/gateway/plugins/basic-auth/'],
  ]) if (re.test(f)) return name;
  return f;
}

if (!reportOnly) {
  execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { stdio: 'inherit', cwd: root });
  const stryker = join(root, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js');
  for (const t of targets) {
    const started = Date.now();
    console.log(`\n== mutation target ${t}: ${TARGETS[t].join(', ')}`);
    execFileSync(process.execPath, [stryker, 'run', 'stryker.config.mjs'], {
      stdio: 'inherit', cwd: root, env: { ...process.env, MUTATION_TARGET: t },
    });
    console.log(`== ${t}: ${Math.round((Date.now() - started) / 1000)} s`);
  }
}

const rows = new Map();
for (const t of targets) {
  const path = join(root, 'reports', 'mutation', `${t}.json`);
  if (!existsSync(path)) continue;
  const report = JSON.parse(readFileSync(path, 'utf8'));
  for (const [file, { mutants }] of Object.entries(report.files)) {
    const folder = folderOf(file.startsWith(root) ? file.slice(root.length + 1) : file);
    const row = rows.get(folder) ?? { killed: 0, timeout: 0, survived: 0, noCoverage: 0, other: 0, survivors: [] };
    for (const m of mutants) {
      if (m.status === 'Killed') row.killed++;
      else if (m.status === 'Timeout') row.timeout++;
      else if (m.status === 'Survived') row.survived++;
      else if (m.status === 'NoCoverage') row.noCoverage++;
      else row.other++;
      if (m.status === 'Survived' || m.status === 'NoCoverage') {
        row.survivors.push(`${file.replace(`${root}/`, '')}:${m.location.start.line} ${m.mutatorName} ${m.status}${m.replacement ? ` → ${m.replacement.slice(0, 60)}` : ''}`);
      }
    }
    rows.set(folder, row);
  }
}
const table = [...rows.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([folder, r]) => {
  const detected = r.killed + r.timeout;
  const valid = detected + r.survived + r.noCoverage;
  return { folder, score: valid ? Math.round((1000 * detected) / valid) / 10 : null, killed: r.killed, timeout: r.timeout, survived: r.survived, noCoverage: r.noCoverage, survivors: r.survivors };
});
console.log('\nMutation score per folder');
console.log('folder'.padEnd(36), 'score'.padStart(6), 'killed'.padStart(7), 'timeout'.padStart(8), 'survived'.padStart(9), 'no-cov'.padStart(7));
for (const r of table) {
  console.log(r.folder.padEnd(36), `${r.score ?? '-'}%`.padStart(6), String(r.killed).padStart(7), String(r.timeout).padStart(8), String(r.survived).padStart(9), String(r.noCoverage).padStart(7));
}
mkdirSync(join(root, 'reports', 'mutation'), { recursive: true });
writeFileSync(join(root, 'reports', 'mutation', 'summary.json'), JSON.stringify(table, null, 2) + '\n');
const below = table.filter((r) => r.score !== null && r.score < 90);
if (below.length) console.log(`\nBelow 90%: ${below.map((r) => r.folder).join(', ')} (survivors in reports/mutation/summary.json)`);

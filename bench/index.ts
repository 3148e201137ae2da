/**
 * `npm run bench [-- name…]`: runs the benchmarks (all, or those named), prints
 * each as a table, then all results as one JSON document (also written to
 * bench/results/latest.json). Targets are reported, never asserted as tests.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { renderTable } from '../src/output/table.js';
import type { Bench, BenchSection } from './report.js';

const benches: Record<string, () => Promise<{ run: Bench }>> = {
  api: () => import('./api.js'),
  gateway: () => import('./gateway.js'),
  fhir: () => import('./fhir.js'),
  soak: () => import('./soak.js'),
  attack: () => import('./attack.js'),
  startup: () => import('./startup.js'),
  audit: () => import('./audit.js'),
};
/** Run only when named: `npm run bench -- soak [--duration 2m]` (10 minutes by default), `npm run bench -- attack [--duration 3m]`. */
const ON_REQUEST = new Set(['soak', 'attack']);
/** Flags that take a value (read by the bench itself). */
const VALUE_FLAGS = new Set(['--duration', '--warmup', '--only', '--ports']);

const args = process.argv.slice(2);
const wanted = args.filter((a, i) => !a.startsWith('-') && !VALUE_FLAGS.has(args[i - 1] ?? ''));
const names = wanted.length ? wanted : Object.keys(benches).filter((n) => !ON_REQUEST.has(n));
const sections: BenchSection[] = [];
/** The machine's load when the run began and ended: the table in docs/benchmarks.md gives both (issue 49). */
const loadAtStart = loadavg();
let failed = false;

for (const name of names) {
  const load = benches[name];
  if (!load) {
    process.stderr.write(`unknown bench ${name}; known: ${Object.keys(benches).join(', ')}\n`);
    process.exitCode = 2;
    continue;
  }
  process.stderr.write(`bench ${name}: running…\n`);
  try {
    const section = await (await load()).run();
    sections.push(section);
    const headers = Object.keys(section.rows[0] ?? {});
    process.stdout.write(`\n## ${section.name}\n${section.description}\n\n`);
    process.stdout.write(renderTable(headers, section.rows.map((r) => headers.map((h) => String(r[h] ?? '')))));
    process.stdout.write('\n');
    process.stdout.write(
      renderTable(
        ['target', 'floor', 'figure', 'ratio', 'goal', 'met'],
        section.targets.map((t) => [t.name, t.floor ?? '', t.figure ?? '', String(t.value), t.target, t.met ? 'yes' : 'NO']),
      ),
    );
  } catch (err) {
    failed = true;
    process.stderr.write(`bench ${name} failed: ${(err as Error).stack ?? String(err)}\n`);
  }
}

const doc = {
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30) },
  load: { start: loadAtStart.map((l) => Math.round(l * 10) / 10), end: loadavg().map((l) => Math.round(l * 10) / 10) },
  node: process.version,
  at: new Date().toISOString(),
  sections,
};
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(new URL('./results/latest.json', import.meta.url), JSON.stringify(doc, null, 2) + '\n');
// docs/benchmarks.md keeps one table of every target beside its floor (issue 49): this is that table, for this run.
writeFileSync(new URL('./results/latest.md', import.meta.url), targetsTable(doc));
process.stdout.write('\n' + JSON.stringify(doc) + '\n');
if (failed) process.exitCode = 1;

/** One Markdown table: each target with its floor and our figure from the same run, the ratio, the goal, met. */
function targetsTable(run: typeof doc): string {
  const cell = (s: string) => s.replaceAll('|', '\\|');
  const lines = [
    `Run: ${run.at}, ${run.machine.cpus} CPUs (${run.machine.cpuModel}), ${run.machine.memoryGiB} GiB, Node ${run.node}; ` +
      `load average ${run.load.start.join(' ')} at the start, ${run.load.end.join(' ')} at the end.`,
    '',
    '| bench | target | floor (same run) | figure | ratio | goal | met |',
    '|---|---|---|---|---|---|---|',
    ...run.sections.flatMap((s) =>
      s.targets.map((t) => `| ${s.name} | ${cell(t.name)} | ${cell(t.floor ?? '–')} | ${cell(t.figure ?? '–')} | ${t.value} | ${cell(t.target)} | ${t.met ? 'yes' : 'no'} |`),
    ),
  ];
  return lines.join('\n') + '\n';
}

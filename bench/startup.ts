/**
 * Start-up cost of the CLI: `node bin/hospital-api.js --help` (and `--version`) against
 * a bare `node -e 0`, each run many times, alternating, as child processes. Wall
 * time is reported. Target: --help at most 1.5× a bare node.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { percentile, round, type BenchSection } from './report.js';

const BIN = fileURLToPath(new URL('../bin/hospital-api.js', import.meta.url));
const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 41);

function wallMs(args: string[]): number {
  const start = process.hrtime.bigint();
  const child = spawnSync(process.execPath, args, { stdio: 'ignore' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (child.status !== 0) throw new Error(`node ${args.join(' ')} exited ${child.status}`);
  return ms;
}

export async function run(): Promise<BenchSection> {
  const cases: Record<string, string[]> = {
    'node -e 0': ['-e', '0'],
    'hospital-api --help': [BIN, '--help'],
    'hospital-api --version': [BIN, '--version'],
  };
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let i = 0; i < RUNS; i++) {
    for (const [name, args] of Object.entries(cases)) samples[name]!.push(wallMs(args));
  }
  const rows = Object.entries(samples).map(([name, s]) => {
    const sorted = [...s].sort((a, b) => a - b);
    return { command: name, 'p50 ms': round(percentile(sorted, 50), 1), 'p90 ms': round(percentile(sorted, 90), 1) };
  });
  const base = rows[0]!;
  const help = rows[1]!;
  const ratio = round(help['p50 ms'] / base['p50 ms']);
  return {
    name: 'startup',
    description: `${RUNS} alternating runs of each command on ${process.version}, wall time of the child process; run it on a quiet machine.`,
    rows,
    targets: [
      { name: '--help / node -e 0 (p50)', value: ratio, target: '<= 1.5', met: ratio <= 1.5 },
    ],
  };
}

/**
 * Prometheus's own checker, promtool (Debian: `apt-get install -y prometheus`,
 * installed by .ci/run). Where it is absent the tests that need it are skipped
 * with one plain line saying so.
 */
import { execa } from 'execa';

const probe = await execa('promtool', ['--version'], { reject: false, timeout: 30_000 }).catch(() => ({ exitCode: 127 }));
export const hasPromtool = probe.exitCode === 0;
if (!hasPromtool) process.stdout.write('skipped: promtool not installed (Debian package prometheus)\n');

export interface PromtoolResult {
  exitCode: number;
  /** stdout and stderr together: promtool prints its findings on either, depending on the command. */
  output: string;
}

/** `promtool check metrics` on an exposition (read from stdin, as Prometheus scrapes it). */
export async function checkMetrics(exposition: string): Promise<PromtoolResult> {
  const r = await execa('promtool', ['check', 'metrics'], { input: exposition, reject: false, all: true, timeout: 60_000 });
  return { exitCode: r.exitCode ?? -1, output: r.all ?? '' };
}

/** `promtool <args>` (check rules, test rules). */
export async function promtool(args: string[], cwd?: string): Promise<PromtoolResult> {
  const r = await execa('promtool', args, { reject: false, all: true, timeout: 120_000, ...(cwd ? { cwd } : {}) });
  return { exitCode: r.exitCode ?? -1, output: r.all ?? '' };
}

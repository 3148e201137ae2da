/**
 * The shell healthcheck that replaces a hung kong or Postgres (render.ts shellHungCheck),
 * run as sh runs it in a container: in a PID namespace of its own (unshare(1), root only)
 * whose PID 1 stands for docker-init and whose child stands for the component. The probe is
 * a shell function whose exit code the test sets before each run. The engine tier
 * (test/docker-engine/hung.test.ts) proves the same on real containers; this one walks
 * every branch of the count in a second.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellHungCheck } from '../../../src/runtime/container/hung-check.js';

const root = process.getuid?.() === 0;
const unshare = spawnSync('unshare', ['--version']).status === 0;

/** The script as the container's sh gets it: the YAML indentation gone and Compose's $$ undone. */
function script(graceS: number | null): string {
  const text = shellHungCheck({ what: 'the thing', command: 'probe', notReadyExit: 1, graceS }, { timeoutS: 1, failures: 2 });
  return text
    .split('\n')
    .map((l) => l.slice(10))
    .join('\n')
    .replaceAll('$$', '$');
}

/**
 * Runs the check once per probe exit code in `codes`, in a new PID and mount namespace
 * (a tmpfs on /tmp for the count), with a `sleep` as the component. One line per run:
 * "<exit code of the check> <its output> | main alive|main dead".
 */
function runChecks(graceS: number | null, codes: number[]): string[] {
  const check = `probe() { return "$(cat /tmp/rc)"; }\n${script(graceS)}`;
  const driver = [
    'mount -t tmpfs tmpfs /tmp',
    // a few pids used up, so that the main process gets a one-digit pid and the orphan below a
    // two-digit one: /proc's glob is in text order, which then lists the orphan first
    'i=0; while [ $i -lt 5 ]; do /bin/true; i=$((i + 1)); done',
    'sleep 300 & main=$!',
    // an orphan reparented to PID 1 after the main process: the check must still pick the main one
    '(sleep 300 & echo $! > /tmp/orphan); sleep 0.1',
    'echo "pids $main $(cat /tmp/orphan)"',
    'alive() { kill -0 "$main" 2>/dev/null && [ "$(cut -d" " -f3 /proc/$main/stat)" != Z ]; }',
    `for c in ${codes.join(' ')}; do`,
    '  echo "$c" > /tmp/rc',
    '  out=$(sh -c "$CHECK" 2>&1); rc=$?',
    // kill(2) returns once SIGKILL is queued, and the target dies when it next runs, which on a
    // loaded machine can be after the read below (a CI run saw "alive"): when the check says it
    // sent SIGKILL, wait up to 10 s for the death; a check that killed nothing still reads alive
    '  case "$out" in *SIGKILL*) i=0; while [ $i -lt 100 ] && alive; do sleep 0.1; i=$((i + 1)); done ;; esac',
    '  if alive; then s=alive; else s=dead; fi',
    '  echo "$rc $out | main $s"',
    'done',
  ].join('\n');
  const out = execFileSync('unshare', ['--pid', '--fork', '--mount-proc', '--mount', 'sh', '-c', driver], { env: { ...process.env, CHECK: check }, encoding: 'utf8', timeout: 30_000 });
  const [pids, ...lines] = out.trim().split('\n');
  const [main, orphan] = (pids ?? '').split(' ').slice(1).map(Number) as [number, number];
  expect(String(main) > String(orphan), `the orphan (${orphan}) sorts before the main process (${main}) in /proc`).toBe(true);
  return lines.map((l) => l.replace(`SIGKILL to pid ${main} `, 'SIGKILL to pid <main> '));
}

describe.skipIf(!root || !unshare)('shellHungCheck in a PID namespace (unshare)', () => {
  it('never kills a process that has not answered once when there is no start grace (a database in initdb)', () => {
    const lines = runChecks(null, [2, 2, 2, 2]);
    expect(lines).toEqual([
      '1 no answer from the thing within 1 s, 1 probe(s) in a row | main alive',
      '1 no answer from the thing within 1 s, 2 probe(s) in a row | main alive',
      '1 no answer from the thing within 1 s, 3 probe(s) in a row | main alive',
      '1 no answer from the thing within 1 s, 4 probe(s) in a row | main alive',
    ]);
  });

  it('counts an answer that is not ready as an answer (resets the count, unhealthy), and kills after the limit in a row', () => {
    const lines = runChecks(null, [1, 2, 0, 2, 1, 2, 2]);
    expect(lines[0]).toBe('1 answers, not ready | main alive');
    expect(lines[1]).toBe('1 no answer from the thing within 1 s, 1 probe(s) in a row | main alive');
    expect(lines[2]).toBe('0 answers | main alive');
    expect(lines[3]).toBe('1 no answer from the thing within 1 s, 1 probe(s) in a row | main alive');
    expect(lines[4]).toBe('1 answers, not ready | main alive');
    expect(lines[5]).toBe('1 no answer from the thing within 1 s, 1 probe(s) in a row | main alive');
    // the main process (the lowest pid whose parent is PID 1), not the younger orphan
    expect(lines[6]).toBe('1 no answer from the thing within 1 s, 2 probe(s) in a row: SIGKILL to pid <main> so the container restarts | main dead');
  });

  it('with a start grace, kills a process that never answered once the grace has passed', () => {
    expect(runChecks(0, [2, 2]).at(-1)).toBe('1 no answer from the thing within 1 s, 2 probe(s) in a row: SIGKILL to pid <main> so the container restarts | main dead');
    expect(runChecks(3600, [2, 2, 2]).at(-1)).toBe('1 no answer from the thing within 1 s, 3 probe(s) in a row | main alive');
  });
});

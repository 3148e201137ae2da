/**
 * Issue 12: "lock takeover is atomic". Real processes race to take over the
 * same stale supervisor lock (its pid is dead) at the same instant, many
 * times; in every round exactly one may win, and the lock must then name the
 * winner. The children are released together by a FIFO (every open(2) for
 * reading blocks until the test opens it for writing, then all wake at once),
 * so they race on both cores instead of one after another; each child runs
 * every round, so a winner stays alive while the others of its round decide.
 *
 * The takeover before ccea7e7 (read the stale pid, rm, link) let a contender
 * remove a lock another had just taken: this test fails on it.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { installPaths } from '../../../src/install-dir/layout.js';
import { acquireSupervisorLock, releaseSupervisorLock } from '../../../src/runtime/native/lock.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { until } from '../../helpers/until.js';

const CONTENDERS = 10;
const ROUNDS = 40;
const lockModule = fileURLToPath(new URL('../../../dist/runtime/native/lock.js', import.meta.url));

const child = `
  const { acquireSupervisorLock } = await import(${JSON.stringify(lockModule)});
  const { openSync, closeSync } = await import('node:fs');
  const [base, rounds] = [process.argv[1], Number(process.argv[2])];
  for (let r = 0; r < rounds; r++) {
    process.stdout.write('ready ' + r + '\\n');
    const gate = openSync(base + '/gate-' + r, 'r'); // blocks until the test opens the FIFO for writing
    const holder = acquireSupervisorLock(base + '/round-' + r);
    closeSync(gate);
    process.stdout.write('result ' + r + ' ' + (holder === null ? 'won' : 'lost:' + holder) + '\\n');
  }
  await new Promise((r) => setTimeout(r, 60_000));`;

afterAll(() => removeTempDirs());

/** A pid that no longer runs (the stale lock's owner). */
async function deadPid(): Promise<number> {
  const p = spawn('true');
  await new Promise((r) => p.once('exit', r));
  return p.pid!;
}

describe('supervisor lock takeover under a real race (issue 12)', () => {
  it(`lets exactly one of ${CONTENDERS} processes released together take over a stale lock, in each of ${ROUNDS} rounds`, async () => {
    const base = tempDir('hapi-lock-race-');
    for (let r = 0; r < ROUNDS; r++) {
      const dir = join(base, `round-${r}`);
      mkdirSync(installPaths(dir).run, { recursive: true });
      await execa('mkfifo', [join(base, `gate-${r}`)]);
    }
    const lines: string[][] = [];
    const procs: ResultPromise[] = Array.from({ length: CONTENDERS }, (_, i) => {
      lines[i] = [];
      const p = execa('node', ['--input-type=module', '-e', child, base, String(ROUNDS)], { reject: false });
      let buf = '';
      p.stdout?.on('data', (d: Buffer) => {
        buf += d.toString();
        const parts = buf.split('\n');
        buf = parts.pop()!;
        lines[i]!.push(...parts);
      });
      return p;
    });
    const linesUntil = (ok: () => boolean, what: string) => until(() => (ok() ? true : JSON.stringify(lines)), { what, timeoutMs: 30_000, intervalMs: 20, ok: (v) => v === true });
    const failures: string[] = [];
    try {
      for (let r = 0; r < ROUNDS; r++) {
        const stale = await deadPid();
        const lock = join(installPaths(join(base, `round-${r}`)).run, 'supervisor.lock');
        writeFileSync(lock, `${stale}\n`);
        await linesUntil(() => lines.every((l) => l.includes(`ready ${r}`)), `round ${r} ready`);
        await new Promise((resolve) => setTimeout(resolve, 30)); // let each child enter open(2)
        const gate = await open(join(base, `gate-${r}`), 'w'); // wakes every reader at once
        try {
          await linesUntil(() => lines.every((l) => l.some((x) => x.startsWith(`result ${r} `))), `round ${r} results`);
        } finally {
          await gate.close();
        }
        const outcomes = lines.map((l, i) => ({ pid: procs[i]!.pid!, out: l.find((x) => x.startsWith(`result ${r} `))!.slice(`result ${r} `.length) }));
        const winners = outcomes.filter((o) => o.out === 'won');
        const holder = Number(readFileSync(lock, 'utf8').trim());
        if (winners.length !== 1 || holder !== winners[0]!.pid || outcomes.some((o) => o.out !== 'won' && o.out !== `lost:${holder}`)) {
          failures.push(`round ${r}: lock names ${holder}; ${outcomes.map((o) => `${o.pid}=${o.out}`).join(' ')}`);
        }
      }
    } finally {
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs);
    }
    expect(failures, failures.join('\n')).toEqual([]);
  }, 120_000);

  it('is not blocked by a taker that died mid-way (its marker passes the right on), and leaves no marker behind', async () => {
    const dir = tempDir('hapi-lock-dead-taker-');
    const run = installPaths(dir).run;
    mkdirSync(run, { recursive: true });
    const [stale, taker, nextTaker] = [await deadPid(), await deadPid(), await deadPid()];
    writeFileSync(join(run, 'supervisor.lock'), `${stale}\n`);
    // Two takers in a row died after claiming the right to remove the stale lock, before doing it.
    writeFileSync(join(run, `supervisor.lock.takeover-${stale}`), `${taker}\n`);
    writeFileSync(join(run, `supervisor.lock.takeover-${stale}-${taker}`), `${nextTaker}\n`);
    expect(acquireSupervisorLock(dir)).toBeNull();
    expect(readFileSync(join(run, 'supervisor.lock'), 'utf8').trim()).toBe(String(process.pid));
    expect(readdirSync(run).filter((f) => f.includes('takeover'))).toEqual([]);
    releaseSupervisorLock(dir);
  });
});

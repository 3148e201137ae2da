/**
 * Spec §4.5.4: certificate verification is never disabled. No flag, variable
 * or code path in the install/verify/record code (or its docker runtime)
 * turns it off; this reads the sources to prove it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OURS = ['src/checks', 'src/install', 'src/record', 'src/runtime/docker', 'src/commands/verify.ts', 'src/commands/install.ts', 'src/commands/record.ts', 'src/commands/consumer.ts', 'templates'];

function files(path: string): string[] {
  const full = join(ROOT, path);
  if (statSync(full).isFile()) return [full];
  return readdirSync(full).flatMap((f) => files(join(path, f)));
}

const INSECURE = [
  /rejectUnauthorized\s*:\s*false/,
  /NODE_TLS_REJECT_UNAUTHORIZED/,
  /checkServerIdentity\s*:\s*\(\)\s*=>\s*undefined/,
  /['"](-k|--insecure)['"]/,
  /verify\s*=\s*False/,
  /insecure|no-verify|skip-verify|tls-verify/i,
];

describe('TLS verification cannot be turned off', () => {
  it('no source line of install/verify/record/docker disables certificate checks', () => {
    const hits: string[] = [];
    for (const file of OURS.flatMap(files)) {
      readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
        if (INSECURE.some((re) => re.test(line))) hits.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(hits).toEqual([]);
  });

  it('the pattern list does catch an insecure line (the scan is real)', () => {
    expect(INSECURE.some((re) => re.test('const agent = new Agent({ connect: { rejectUnauthorized: false } })'))).toBe(true);
    expect(INSECURE.some((re) => re.test("args.push('-k')"))).toBe(true);
  });

  it('verify offers no option to skip verification', async () => {
    const help = await runCli(['verify', '--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).not.toMatch(/insecure|no-verify|skip/i);
    expect((await runCli(['verify', '--insecure'])).exitCode).toBe(2);
  });
});

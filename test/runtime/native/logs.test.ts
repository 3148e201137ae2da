/** `hospital-api logs`: history with per-component prefixes, and -f following appended lines. */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { until } from '../../helpers/until.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import { makeNativeInstall } from '../../helpers/native-install.js';

afterAll(removeTempDirs);

describe('hospital-api logs', () => {
  it('prints the last lines of each log, prefixed by component, and -n limits them', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    mkdirSync(installPaths(dir).logs, { recursive: true });
    writeFileSync(`${installPaths(dir).logs}/fhir.log`, 'f1\nf2\nf3\n');
    writeFileSync(`${installPaths(dir).logs}/api.log`, 'a1\n');
    const all = await runCli(['logs', '--dir', dir]);
    expect(all.exitCode).toBe(0);
    expect(String(all.stdout)).toMatch(/^fhir\s+\| f1$/m);
    expect(String(all.stdout)).toMatch(/^api\s+\| a1$/m);
    const one = await runCli(['logs', 'fhir', '-n', '2', '--dir', dir]);
    expect(String(one.stdout)).toBe('f2\nf3'); // execa strips the final newline
    // the Hospital API's audit log is one of them (issue 27: on both runtimes)
    writeFileSync(`${installPaths(dir).logs}/audit.log`, '{"event":"started"}\n{"event":"ended"}\n');
    const audit = await runCli(['logs', 'audit', '-n', '1', '--dir', dir]);
    expect([audit.exitCode, String(audit.stdout)]).toEqual([0, '{"event":"ended"}']);
  });

  it('-f prints what is appended until stopped', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    const log = `${installPaths(dir).logs}/gateway.log`;
    mkdirSync(installPaths(dir).logs, { recursive: true });
    writeFileSync(log, 'before\n');
    const child = startCli(['logs', 'gateway', '-f', '--dir', dir]);
    let seen = '';
    child.stdout?.on('data', (d: Buffer) => (seen += d.toString()));
    const waitFor = (text: string) => until(() => seen.includes(text), { what: `${JSON.stringify(text)} on logs -f's stdout`, timeoutMs: 15_000 });
    try {
      await waitFor('before');
      appendFileSync(log, 'after\n');
      await waitFor('after');
      expect(seen).toBe('before\nafter\n');
    } finally {
      child.kill('SIGTERM');
      await child;
    }
  });
});

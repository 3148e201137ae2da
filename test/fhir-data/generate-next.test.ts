/** The `fhir load` line `fhir generate` prints ends the job: with --dir it names that installation, quoted for a shell. */
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(removeTempDirs);

const loadLine = (stdout: unknown) => /^Load with: (.*)$/m.exec(String(stdout))?.[1];

describe('fhir generate prints the next command', () => {
  it('names --dir when it was given one, each path one shell word', async () => {
    const out = join(tempDir(), "it's data");
    const site = join(tempDir(), 'site');
    const r = await runCli(['fhir', 'generate', '--patients', '1', '--seed', 's', '--sizes', '10', '--out', out, '--dir', site]);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const line = loadLine(r.stdout)!;
    expect(line).toMatch(/^hospital-api fhir load --dir \S+ /);
    const words = await execa('sh', ['-c', `for w in ${line}; do printf '%s\\n' "$w"; done`]);
    expect(words.stdout.split('\n')).toEqual(['hospital-api', 'fhir', 'load', '--dir', site, join(out, '00-shared.json'), join(out, '01-patients.ndjson')]);
  });

  it('without --dir, none', async () => {
    const out = tempDir();
    const r = await runCli(['fhir', 'generate', '--patients', '1', '--seed', 's', '--sizes', '10', '--out', out]);
    expect(loadLine(r.stdout)).toBe(`hospital-api fhir load ${join(out, '00-shared.json')} ${join(out, '01-patients.ndjson')}`);
  });
});

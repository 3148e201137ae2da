/**
 * The colour rules through the real CLI: its stderr is a pipe here, so only FORCE_COLOR
 * colours it, and FORCE_COLOR=0 or NO_COLOR still win. The warning `fhir load` prints
 * for a state file of another server is the coloured line (yellow).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(removeTempDirs);

const ESC = '\x1b[';

/** `fhir load` with a state file written for another URL: a warning, then the unreachable server's error. */
async function warningWith(env: Record<string, string | undefined>): Promise<string> {
  const dir = tempDir('colour-cli-');
  writeFileSync(join(dir, 'b.json'), JSON.stringify({ resourceType: 'Bundle', type: 'batch', entry: [] }));
  writeFileSync(join(dir, 'state.json'), JSON.stringify({ version: 1, url: 'http://other.example/fhir', done: {} }));
  // extendEnv false: the child sees exactly this environment, so NO_COLOR is really absent unless given
  const r = await runCli(['fhir', 'load', 'b.json', '--url', 'http://127.0.0.1:9/fhir', '--state', 'state.json'], {
    cwd: dir,
    extendEnv: false,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: undefined, ...env },
  });
  const stderr = String(r.stderr);
  expect(stderr).toMatch(/warning: ignoring .*state\.json: it was written for http:\/\/other\.example\/fhir/);
  return stderr;
}

describe('colour on the CLI', () => {
  it('FORCE_COLOR=1 colours a pipe', async () => {
    expect(await warningWith({ FORCE_COLOR: '1' })).toContain(`${ESC}33mwarning:`);
  });

  it('FORCE_COLOR=0, TERM=dumb, NO_COLOR and a plain pipe do not', async () => {
    for (const env of [{ FORCE_COLOR: '0' }, { TERM: 'dumb' }, { NO_COLOR: '1', FORCE_COLOR: '1' }, {}]) {
      expect(await warningWith(env), JSON.stringify(env)).not.toContain(ESC);
    }
  });
});

import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { commands } from '../../src/commands/index.js';

// The card's command names must exist and answer --help (exit 0) through the real bin.
const CARD_COMMANDS = ['install', 'verify', 'serve'];

describe('the hospital-api CLI', () => {
  it('lists every command in --help', async () => {
    const r = await runCli(['--help']);
    expect(r.exitCode).toBe(0);
    for (const name of [...CARD_COMMANDS, 'gateway', 'fhir', 'consumer', 'record', 'up', 'down', 'status', 'logs', 'demo']) {
      expect(r.stdout).toMatch(new RegExp(`^  ${name}\\b`, 'm'));
    }
  });

  it('exits 2 on an unknown command and on an unknown option', async () => {
    expect((await runCli(['no-such-command'])).exitCode).toBe(2);
    expect((await runCli(['verify', '--no-such-option'])).exitCode).toBe(2);
  });

  it('prints its version', async () => {
    const r = await runCli(['--version']);
    expect(r.exitCode).toBe(0);
    expect(String(r.stdout).trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  // dist/cli.js is one bundle holding commander (scripts/build.mjs); each command
  // module is still its own file, loaded lazily from it. A command module that
  // imported commander's classes itself would load a second commander from
  // node_modules (Node's module debug log names every CommonJS file it loads).
  it('answers --help for every command from the bundled entry, with commander loaded once', async () => {
    for (const { name } of commands) {
      const r = await runCli([name, '--help'], { env: { NODE_DEBUG: 'module' } });
      expect(r.exitCode, `${name} --help`).toBe(0);
      expect(r.stdout, `${name} --help`).toContain(`Usage: hospital-api ${name}`);
      expect(String(r.stderr), `${name} --help`).not.toMatch(/node_modules\/commander\//);
    }
  });
});

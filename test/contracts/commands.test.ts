import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

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
});

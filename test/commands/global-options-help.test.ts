/** Subcommand help lists the global options too: --json and -q work on every command, so its help says so. */
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

describe('subcommand --help', () => {
  it.each(['fhir load', 'record verify', 'verify', 'gateway export', 'consumer create'])('%s shows --json and -q, --quiet', async (command) => {
    const r = await runCli([...command.split(' '), '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/Global Options:/);
    expect(r.stdout).toMatch(/^\s+--json\b/m);
    expect(r.stdout).toMatch(/^\s+-q, --quiet\b/m);
  });
});

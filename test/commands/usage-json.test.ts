/**
 * docs/cli.md: with --json, a usage error is one JSON document on stdout like every
 * other failure (exit 2), whether commander or the command's own handler found it.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

async function usageError(args: string[]) {
  const r = await runCli(args);
  expect(r.exitCode, args.join(' ')).toBe(2);
  const lines = String(r.stdout).trim().split('\n');
  expect(lines, args.join(' ')).toHaveLength(1);
  const doc = JSON.parse(lines[0] as string) as { ok: boolean; command: string | null; error: { code: string; message: string; hint: string | null } };
  expect(doc.ok).toBe(false);
  expect(doc.error.code).toBe('ERR_USAGE');
  expect(doc.error.hint).toMatch(/--help/);
  return { doc, stderr: String(r.stderr) };
}

describe('usage errors with --json', () => {
  it('an unknown option: one document naming the command and the option', async () => {
    const { doc, stderr } = await usageError(['verify', '--no-such-option', '--json']);
    expect(doc.command).toBe('verify');
    expect(doc.error.message).toBe("unknown option '--no-such-option'");
    expect(stderr).not.toMatch(/Usage:/); // no help dump around the document
  });

  it('a missing argument of a subcommand, --json given first', async () => {
    const { doc } = await usageError(['--json', 'fhir', 'load']);
    expect(doc.command).toBe('fhir load');
    expect(doc.error.message).toMatch(/missing required argument 'files'/);
  });

  it('an option without its value, and a value the handler refuses', async () => {
    expect((await usageError(['fhir', 'load', 'x.json', '--concurrency', '--json'])).doc.command).toBe('fhir load');
    const { doc } = await usageError(['fhir', 'load', 'x.json', '--concurrency', '0', '--json']);
    expect(doc.error.message).toMatch(/--concurrency/);
  });

  it('an unknown command', async () => {
    const { doc } = await usageError(['no-such-command', '--json']);
    expect(doc.command).toBeNull();
    expect(doc.error.message).toMatch(/unknown command 'no-such-command'/);
  });

  it('without --json, the human message and help stay on stderr, stdout empty', async () => {
    const r = await runCli(['verify', '--no-such-option']);
    expect(r.exitCode).toBe(2);
    expect(String(r.stdout)).toBe('');
    expect(String(r.stderr)).toMatch(/unknown option '--no-such-option'/);
  });
});

/**
 * Issue 48: a hint that names another command names the install it means. The
 * command's own --dir (or $HOSPITAL_API_DIR) fills `{dirFlag}` in hints raised
 * where the directory was not known (a runtime, a reload), quoted for a shell.
 */
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { action } from '../../src/commands/action.js';
import { HospitalApiError } from '../../src/errors/index.js';

function program(withDir: boolean): Command {
  const p = new Command().exitOverride().option('--json');
  const c = p.command('renew');
  if (withDir) c.option('--dir <dir>');
  c.action(
    action('cert renew', async () => {
      throw new HospitalApiError('ERR_CERT_NOT_PICKED_UP', { seconds: 30 });
    }),
  );
  return p;
}

async function hintOf(args: string[], withDir = true): Promise<string> {
  const out: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (out.push(String(chunk)), true));
  try {
    await program(withDir).parseAsync(['node', 'hospital-api', ...args, '--json']);
  } finally {
    spy.mockRestore();
    process.exitCode = undefined;
  }
  return (JSON.parse(out.join('')) as { error: { hint: string } }).error.hint;
}

describe('hints carry the install directory', () => {
  afterEach(() => {
    delete process.env.HOSPITAL_API_DIR;
  });

  it('--dir given: every command in the hint gets it, shell-quoted', async () => {
    expect(await hintOf(['renew', '--dir', '/srv/hospital api'])).toBe(
      "Read `hospital-api logs gateway --dir '/srv/hospital api'`; restart it with `hospital-api down --dir '/srv/hospital api' && hospital-api up --dir '/srv/hospital api'` if it does not reload.",
    );
  });

  it('$HOSPITAL_API_DIR stands for --dir', async () => {
    process.env.HOSPITAL_API_DIR = '/srv/site';
    expect(await hintOf(['renew'])).toMatch(/^Read `hospital-api logs gateway --dir \/srv\/site`/);
  });

  it('the default directory, or a command without --dir: the hint as written', async () => {
    expect(await hintOf(['renew'])).toMatch(/^Read `hospital-api logs gateway`; restart it with `hospital-api down && hospital-api up`/);
    process.env.HOSPITAL_API_DIR = '/srv/site';
    expect(await hintOf(['renew'], false)).not.toMatch(/--dir/);
  });
});

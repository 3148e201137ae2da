/** install's CLI surface: usage errors exit 2 and write nothing; --no-start writes the directory only. */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runInstall } from '../../src/install/run.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { cli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(removeTempDirs);

describe('hospital-api install (CLI)', () => {
  it.each([
    [['--api-port', 'abc', '--generate-ca'], 2, 'ERR_INSTALL_BAD_OPTION'],
    [['--ca', '/etc/hostname', '--generate-ca'], 2, 'ERR_INSTALL_TLS_OPTIONS'],
    [['--ca', '/etc/hostname'], 2, 'ERR_INSTALL_TLS_OPTIONS'],
    [['--host', 'a b', '--generate-ca'], 2, 'ERR_INSTALL_BAD_OPTION'],
    [[], 2, 'ERR_INSTALL_TLS_OPTIONS'],
    [['--supervisor', 'cron', '--generate-ca'], 2, 'ERR_INSTALL_BAD_OPTION'],
  ])('%j → exit %i %s, nothing written', async (args, exit, code) => {
    const dir = join(tempDir(), 'inst');
    const r = await cli(['install', '--runtime', 'native', '--no-start', '--dir', dir, '--json', ...args]);
    expect(r.code).toBe(exit);
    expect(JSON.parse(r.out).error.code).toBe(code);
    expect(existsSync(dir)).toBe(false);
  });

  it('--no-start writes the install directory (keys 0600) and explains the next steps', async () => {
    const dir = join(tempDir(), 'inst');
    const r = await cli(['install', '--runtime', 'native', '--no-start', '--dir', dir, '--generate-ca', '--host', 'fhir.hospital.example']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('consumer create');
    expect(r.out).toContain('PLATFORM_API_URL');
    expect(r.err).toContain('PLATFORM_API_URL is not set');
    const p = installPaths(dir);
    expect(statSync(p.gatewayKey).mode & 0o777).toBe(0o600);
    expect(statSync(p.secrets).mode & 0o777).toBe(0o700);
    expect(existsSync(p.installJson)).toBe(true);
  });

  it('refuses to switch an installation to another runtime', async () => {
    const dir = join(tempDir(), 'inst');
    expect((await cli(['install', '--runtime', 'native', '--no-start', '--dir', dir, '--generate-ca'])).code).toBe(0);
    const r = await cli(['install', '--runtime', 'docker', '--no-start', '--dir', dir, '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out).error.code).toBe('ERR_INSTALL_RUNTIME_CONFLICT');
  });

  it('records who runs a native install: --supervisor, else $HOSPITAL_API_SUPERVISOR (the package sets it) for a new one, and keeps it on a rerun', async () => {
    const supervisorOf = (dir: string) => (JSON.parse(readFileSync(installPaths(dir).installJson, 'utf8')) as { supervisor?: string }).supervisor;
    const byEnv = join(tempDir(), 'inst');
    expect((await cli(['install', '--runtime', 'native', '--no-start', '--dir', byEnv, '--generate-ca'], { env: { HOSPITAL_API_SUPERVISOR: 'systemd' } })).code).toBe(0);
    expect(supervisorOf(byEnv)).toBe('systemd');
    expect((await cli(['install', '--no-start', '--dir', byEnv], { env: { HOSPITAL_API_SUPERVISOR: 'builtin' } })).code).toBe(0);
    expect(supervisorOf(byEnv), 'a rerun keeps what the install chose').toBe('systemd');
    expect((await cli(['install', '--no-start', '--dir', byEnv, '--supervisor', 'builtin'])).code).toBe(0);
    expect(supervisorOf(byEnv)).toBe('builtin');
    const plain = join(tempDir(), 'inst');
    expect((await cli(['install', '--runtime', 'native', '--no-start', '--dir', plain, '--generate-ca'])).code).toBe(0);
    expect(supervisorOf(plain)).toBeUndefined();
    const bad = join(tempDir(), 'inst');
    const r = await cli(['install', '--runtime', 'native', '--no-start', '--dir', bad, '--generate-ca', '--json'], { env: { HOSPITAL_API_SUPERVISOR: 'cron' } });
    expect([r.code, JSON.parse(r.out).error.code]).toEqual([2, 'ERR_INSTALL_BAD_OPTION']);
    expect(existsSync(bad)).toBe(false);
    // `hospital-api demo` installs in process (src/demo/steps.ts), as here
    const demo = join(tempDir(), 'inst');
    process.env.HOSPITAL_API_SUPERVISOR = 'systemd';
    try {
      await runInstall({ runtime: 'native', dir: demo, generateCa: true, start: false, demo: true }, { log: () => undefined });
    } finally {
      delete process.env.HOSPITAL_API_SUPERVISOR;
    }
    expect(supervisorOf(demo), 'a DEMO install never runs as system services').toBeUndefined();
    const docker = join(tempDir(), 'inst');
    const d = await cli(['install', '--runtime', 'docker', '--no-start', '--dir', docker, '--generate-ca', '--supervisor', 'systemd', '--json']);
    expect([d.code, JSON.parse(d.out).error.code]).toEqual([2, 'ERR_INSTALL_BAD_OPTION']);
  });

  it('verify and consumer create on a directory without an install exit 3 with a hint', async () => {
    const dir = join(tempDir(), 'none');
    for (const args of [['verify', '--dir', dir], ['consumer', 'create', 'x', '--dir', dir]]) {
      const r = await cli([...args, '--json']);
      expect(r.code).toBe(3);
      expect(JSON.parse(r.out).error.code).toBe('ERR_RUNTIME_NOT_INSTALLED');
    }
  });
});

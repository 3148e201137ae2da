/**
 * Issue #12 on the install directory: `down` works from run/state.json when
 * install.json is damaged; the files the toolkit reads are schema-checked with
 * errors naming the file and the field; the directory, data and logs are
 * private (0700/0600) and the verify check says so; `status | true` (a reader
 * that goes away) does not crash the command.
 */
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import { readInstallConfig } from '../../../src/install-dir/install-config.js';
import { startStack } from '../../../src/runtime/native/control.js';
import { isAlive, statePath } from '../../../src/runtime/native/state.js';
import { filePermissions } from '../../../src/checks/file-permissions.js';
import type { CheckContext } from '../../../src/checks/types.js';
import { createNativeRuntime } from '../../../src/runtime/native/index.js';
import { makeNativeInstall } from '../../helpers/native-install.js';

const FAKE = fileURLToPath(new URL('./fixtures/fake-components.mjs', import.meta.url));
const SUPERVISOR = fileURLToPath(new URL('./fixtures/supervisor.mjs', import.meta.url));
const started: string[] = [];

async function up(dir: string) {
  started.push(dir);
  return startStack(dir, readInstallConfig(dir), { supervisorArgs: [SUPERVISOR, dir, JSON.stringify({ componentBin: FAKE })], timeoutMs: 60_000 });
}

afterEach(async () => {
  for (const dir of started.splice(0)) await runCli(['down', '--dir', dir]);
});
afterAll(removeTempDirs);

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe('down with a damaged install.json', () => {
  it('stops every recorded process from run/state.json', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    const state = await up(dir);
    const pids = [state.supervisorPid, ...state.components.map((c) => c.pid as number)];
    expect(pids.every(isAlive)).toBe(true);
    writeFileSync(installPaths(dir).installJson, '{"formatVersion": 1, "runtime": "nat');
    const down = await runCli(['down', '--dir', dir]);
    expect(down.exitCode, String(down.stderr)).toBe(0);
    expect(String(down.stderr)).toContain('install.json');
    expect(String(down.stdout)).toContain('from run/state.json');
    for (const pid of pids) expect(isAlive(pid), `pid ${pid}`).toBe(false);
  });
});

describe('schema-checked files', () => {
  const cases: Array<[string, (c: Record<string, any>) => void, RegExp]> = [
    ['a port that is not a number', (c) => (c.ports.api = 'abc'), /install\.json: ports\.api: must be integer, got "abc"/],
    ['a port out of range', (c) => (c.ports.fhir = 70000), /install\.json: ports\.fhir: must be <= 65535, got 70000/],
    ['a missing field', (c) => delete c.runtime, /install\.json: runtime is missing/],
    ['an unknown runtime', (c) => (c.runtime = 'podman'), /install\.json: runtime: must be equal to one of the allowed values, got "podman"/],
  ];
  it.each(cases)('refuses install.json with %s, naming the file and the field', async (_name, damage, message) => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    const config = JSON.parse(readFileSync(installPaths(dir).installJson, 'utf8')) as Record<string, any>;
    damage(config);
    writeFileSync(installPaths(dir).installJson, JSON.stringify(config));
    const r = await runCli(['status', '--dir', dir]);
    expect(r.exitCode).toBe(3);
    expect(String(r.stderr)).toMatch(message);
    expect(String(r.stderr)).toContain('ERR_FILE_READ');
  });

  it('refuses a truncated install.json with a clear error, not a crash', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    writeFileSync(installPaths(dir).installJson, '{"formatVersion": 1, "ru');
    const r = await runCli(['status', '--dir', dir]);
    expect(r.exitCode).toBe(3);
    expect(String(r.stderr)).toMatch(/ERR_FILE_READ: Cannot read .*install\.json: not valid JSON/);
  });

  it('refuses a damaged run/state.json naming the field', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    mkdirSync(installPaths(dir).run, { recursive: true });
    writeFileSync(statePath(dir), JSON.stringify({ supervisorPid: 1, startedAt: 'x', demo: false, components: [{ name: 'fhir', state: 'up', detail: '', pid: 'twelve', ports: [], startedAt: null, restarts: 0, version: '1', log: 'x' }] }));
    const r = await runCli(['status', '--dir', dir]);
    expect(r.exitCode).toBe(3);
    expect(String(r.stderr)).toMatch(/state\.json: components\[0\]\.pid: must be integer,null, got "twelve"/);
  });
});

describe('a private install directory', () => {
  it('keeps folders 0700 and data, logs and state 0600, and the verify check reports a loose one', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    chmodSync(dir, 0o755);
    await up(dir);
    const p = installPaths(dir);
    expect(mode(p.root)).toBe('700');
    expect(mode(p.logs)).toBe('700');
    expect(mode(p.run)).toBe('700');
    expect(mode(p.fhirData)).toBe('700');
    expect(mode(join(p.fhirData, 'fhir.sqlite'))).toBe('600');
    expect(mode(join(p.fhirData, 'fhir.sqlite-wal'))).toBe('600');
    expect(mode(join(p.logs, 'fhir.log'))).toBe('600');
    expect(mode(join(p.logs, 'supervisor.log'))).toBe('600');
    expect(mode(statePath(dir))).toBe('600');
    expect(mode(p.installJson)).toBe('600');

    const ctx = { dir, paths: installPaths(dir), config, runtime: createNativeRuntime(dir, config) } as unknown as CheckContext;
    expect(await filePermissions.run(ctx)).toMatchObject({ status: 'pass' });
    chmodSync(p.fhirData, 0o755);
    chmodSync(join(p.fhirData, 'fhir.sqlite-wal'), 0o644);
    const outcome = await filePermissions.run(ctx);
    expect(outcome.status).toBe('fail');
    expect(outcome.summary).toContain('fhir (0755)');
    expect(outcome.summary).toContain('fhir/fhir.sqlite-wal (0644)');
  });
});

describe('output to a closed pipe', () => {
  it('`status | true` exits quietly instead of dying on EPIPE', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    for (let i = 0; i < 3; i++) {
      const r = await execa('bash', ['-c', `set -o pipefail; node ${JSON.stringify(BIN)} status --dir ${JSON.stringify(dir)} | true`], { reject: false, env: { NO_COLOR: '1' } });
      expect(r.stderr).toBe('');
      // the stack is not running: status's own 3 (as systemctl's), not a crash on EPIPE
      expect(r.exitCode).toBe(3);
    }
  });
});

/**
 * `gateway export --dir <install dir>`: the installation's running gateway, read through its
 * runtime's admin API, exports exactly what its state file does; no installation there is exit 3.
 */
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeInstallConfig } from '../../src/install-dir/install-config.js';
import { runCli } from '../helpers/cli.js';
import { installConfig } from '../helpers/install-config.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { startGatewayChild, type GatewayChild } from './admin/child.js';

let gw: GatewayChild;
let statePath = '';
let site = '';

async function admin(method: string, path: string, body: unknown): Promise<number> {
  const res = await request(`${gw.admin}${path}`, { method: method as 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await res.body.dump();
  return res.statusCode;
}

beforeAll(async () => {
  const dir = tempDir('gw-export-dir-');
  statePath = join(dir, 'state.json');
  gw = await startGatewayChild(statePath);
  site = tempDir('gw-export-site-');
  writeInstallConfig(site, installConfig({ runtime: 'native', hosts: ['127.0.0.1'], ports: { gatewayAdmin: Number(new URL(gw.admin).port) } }));
  expect(await admin('POST', '/services', { name: 'svc', url: 'http://127.0.0.1:9/x' })).toBe(201);
  expect(await admin('POST', '/consumers', { username: 'platform' })).toBe(201);
  expect(await admin('POST', '/consumers/platform/key-auth', { key: 'k-export-dir-0123456789' })).toBe(201);
}, 60_000);
afterAll(async () => {
  await gw?.kill();
  removeTempDirs();
});

describe('gateway export --dir', () => {
  it.each(['deck', 'kong'])('--format %s: the same document as from the state file', async (format) => {
    const fromDir = await runCli(['gateway', 'export', '--dir', site, '--format', format]);
    expect(fromDir.exitCode, String(fromDir.stderr)).toBe(0);
    const fromState = await runCli(['gateway', 'export', '--state', statePath, '--format', format]);
    expect(fromState.exitCode, String(fromState.stderr)).toBe(0);
    expect(fromDir.stdout).toContain('username: platform');
    expect(fromDir.stdout).toBe(fromState.stdout);
  });

  it('refuses a folder with no installation (exit 3) and --dir with --state (exit 2)', async () => {
    const none = await runCli(['--json', 'gateway', 'export', '--dir', tempDir()]);
    expect(none.exitCode).toBe(3);
    expect(JSON.parse(String(none.stdout)).error.code).toBe('ERR_RUNTIME_NOT_INSTALLED');
    const both = await runCli(['--json', 'gateway', 'export', '--dir', site, '--state', statePath]);
    expect(both.exitCode).toBe(2);
  });
});

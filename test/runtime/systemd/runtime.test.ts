/**
 * Issue 15: a native install run by systemd (`hospital-api systemd --managed`)
 * goes through systemctl for status, verify, the key rotation and the
 * certificate reload. No systemd runs where this is tested, so a `systemctl`
 * stand-in on PATH answers `show` from the real running processes (started
 * here by the built-in supervisor) and performs `reload` as systemd's
 * ExecReload would (SIGHUP to the main pid). What is proven: the runtime reads
 * systemctl's answers and drives real components with them.
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import { readRunState } from '../../../src/runtime/native/state.js';
import { loadLoop, startNativeSite, type NativeSite } from '../../helpers/native-site.js';

let site: NativeSite;
let env: Record<string, string>;
const bin = tempDir('hapi-fake-systemctl-');

const FAKE = `#!${process.execPath}
const fs = require('fs');
const dir = process.env.FAKE_SYSTEMD_DIR;
const args = process.argv.slice(2);
fs.appendFileSync(dir + '/systemctl.log', args.join(' ') + '\\n');
const state = JSON.parse(fs.readFileSync(dir + '/run/state.json', 'utf8'));
const m = /^hospital-api-(\\w+)\\.service$/.exec(args[args.length - 1] || '');
const c = m && state.components.find((x) => x.name === m[1]);
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
if (args[0] === 'show') {
  const up = c && c.pid && alive(c.pid);
  process.stdout.write('MainPID=' + (up ? c.pid : 0) + '\\nActiveState=' + (up ? 'active' : 'inactive') + '\\nSubState=' + (up ? 'running' : 'dead') + '\\nNRestarts=' + (c ? c.restarts : 0) + '\\n');
} else if (args[0] === 'reload' && c && c.pid) {
  process.kill(c.pid, 'SIGHUP');
} else {
  process.stderr.write('systemctl stand-in: ' + args.join(' ') + ' is not simulated\\n');
  process.exit(1);
}
`;

beforeAll(async () => {
  site = await startNativeSite({ seed: 'day2-systemd', patients: 2, sizes: '20-60' });
  writeFileSync(join(bin, 'systemctl'), FAKE);
  chmodSync(join(bin, 'systemctl'), 0o755);
  env = { PATH: `${bin}:${process.env.PATH}`, FAKE_SYSTEMD_DIR: installPaths(site.dir).root };
  const managed = await site.cli(['systemd', '--managed'], env);
  expect(managed.code, managed.err).toBe(0);
  expect(JSON.parse(readFileSync(installPaths(site.dir).installJson, 'utf8')).supervisor).toBe('systemd');
});

afterAll(async () => {
  if (site) await site.cli(['systemd', '--builtin'], env); // so `down` stops the processes this test started
  await site?.close();
  removeTempDirs();
});

describe('native install managed by systemd (issue 15)', () => {
  it('status and verify read the components through systemctl', async () => {
    const status = await site.cli(['status', '--json'], env);
    expect(status.code, status.err).toBe(0);
    const components = JSON.parse(status.out).result.components as Array<{ name: string; state: string; pid: number; detail: string }>;
    const recorded = readRunState(site.dir)!.components;
    expect(components.map((c) => [c.name, c.state, c.pid])).toEqual(['fhir', 'gateway', 'api'].map((n) => [n, 'up', recorded.find((r) => r.name === n)!.pid]));
    expect(components[0]!.detail).toContain('hospital-api-fhir.service active');
    const verify = await site.cli(['verify'], env);
    expect(verify.code, verify.out + verify.err).toBe(0);
    expect(readFileSync(join(site.dir, 'systemctl.log'), 'utf8')).toContain('show -p MainPID');
  });

  it('rotate-key switches the API (SIGHUP to systemd\'s main pid) with no failed request, and cert renew reloads through `systemctl reload`', async () => {
    const load = loadLoop(site, 2);
    const rotate = await site.cli(['consumer', 'rotate-key', 'day2-hospital', '--write-env'], env);
    const renew = await site.cli(['cert', 'renew'], env);
    const results = await load.stop();
    expect(rotate.code, rotate.err).toBe(0);
    expect(renew.code, renew.err).toBe(0);
    expect(results.filter((r) => r.status !== 200 || r.error)).toEqual([]);
    expect(readFileSync(join(site.dir, 'systemctl.log'), 'utf8')).toContain('reload hospital-api-gateway.service');
    // the same processes all along: nothing was restarted
    const status = JSON.parse((await site.cli(['status', '--json'], env)).out).result.components as Array<{ pid: number }>;
    expect(status.map((c) => c.pid)).toEqual(['fhir', 'gateway', 'api'].map((n) => readRunState(site.dir)!.components.find((r) => r.name === n)!.pid));
  });
});

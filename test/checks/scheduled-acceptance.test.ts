/**
 * Issue 46, scheduled acceptance on a real native stack through the real CLI:
 * `verify --scheduled` writes a signed record the first time, nothing while
 * nothing changed, and a new one when the gateway's configuration changed;
 * the Hospital API's /metrics reads the newest signed record; and `install
 * --verify-every` on the running stack makes the supervisor run it, with its
 * output in `logs acceptance`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readInstallConfig, endpoints } from '../../src/install-dir/install-config.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { metricsTokenPath } from '../../src/install-dir/metrics-token.js';
import { runCli } from '../helpers/cli.js';
import { installNative, type NativeInstall } from '../helpers/native-install.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';

let site: NativeInstall;
const records = () => readdirSync(installPaths(site.dir).reports).filter((n) => /^acceptance-.*\.json$/.test(n)).sort();

async function scheduled(): Promise<{ code: number | undefined; result: { recordPath: string | null; written: string | null; previousRecordPath: string | null; record: { result: string; testedAt: string } } }> {
  const r = await runCli(['verify', '--scheduled', '--dir', site.dir, '--json']);
  return { code: r.exitCode, result: JSON.parse(String(r.stdout)).result };
}

/** The value of a gauge of the API's /metrics, and the record its `record` label names; null when absent. */
async function metric(name: string): Promise<number | null> {
  // the token install made for the site's Prometheus (issue 45)
  const token = readFileSync(metricsTokenPath(installPaths(site.dir)), 'utf8').trim();
  const res = await request(`http://127.0.0.1:${site.ports.metrics}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.body.text();
  const m = new RegExp(`^${name}\\{record="([^"]+)"\\} (\\S+)$`, 'm').exec(text);
  if (!m) return null;
  expect(m[1]).toBe(records().at(-1));
  return Number(m[2]);
}

beforeAll(async () => {
  site = await installNative({ dir: tempDir('scheduled-acceptance-'), consumer: 'hospital' });
}, 180_000);

afterAll(async () => {
  await runCli(['down', '--dir', site.dir]);
  removeTempDirs();
});

describe('scheduled acceptance (issue 46)', () => {
  it('swarm refuses --verify-every before anything is written, saying why and what to schedule instead', async () => {
    const dir = join(tempDir('scheduled-swarm-'), 'site');
    const r = await runCli(['install', '--runtime', 'swarm', '--dir', dir, '--generate-ca', '--no-start', '--verify-every', '1h', '--json'], { env: { DOCKER_HOST: 'unix:///nonexistent.sock' } });
    expect(r.exitCode).toBe(2);
    const error = JSON.parse(String(r.stdout)).error as { code: string; message: string };
    expect(error.code).toBe('ERR_USAGE');
    expect(error.message).toContain("cannot join the gateway's network namespace");
    expect(error.message).toContain('verify --scheduled --dir <install dir>');
    expect(existsSync(dir)).toBe(false);
  });

  it('verify --scheduled: a record the first time, none while unchanged, one when the gateway configuration changed; /metrics follows the newest', async () => {
    expect(await metric('hospital_api_acceptance_result')).toBeNull();

    const first = await scheduled();
    expect(first.code).toBe(0);
    expect(first.result.written).toBe('first');
    expect(records()).toHaveLength(1);
    expect(await metric('hospital_api_acceptance_result')).toBe(1);
    expect(await metric('hospital_api_acceptance_last_run_timestamp_seconds')).toBe(Math.floor(Date.parse(first.result.record.testedAt) / 1000));

    const again = await scheduled();
    expect(again.code).toBe(0);
    expect([again.result.written, again.result.recordPath]).toEqual([null, null]);
    expect(again.result.previousRecordPath).toBe(first.result.recordPath);
    expect(records()).toHaveLength(1);

    // someone adds a route (credentials still required: ACCEPTED), so the configuration digest changes
    const admin = endpoints(readInstallConfig(site.dir)).nativeAdmin;
    const added = await request(`${admin}/services/fhir-api/routes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'night-route', paths: ['/night'], protocols: ['https'] }) });
    expect(added.statusCode, await added.body.text()).toBe(201);
    const changed = await scheduled();
    expect(changed.code).toBe(0);
    expect(changed.result.written).toBe('gateway configuration changed');
    expect(records()).toHaveLength(2);
    const newest = JSON.parse(readFileSync(changed.result.recordPath!, 'utf8')) as { previousRecordSha256: string | null };
    expect(newest.previousRecordSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(await metric('hospital_api_acceptance_last_run_timestamp_seconds')).toBe(Math.floor(Date.parse(changed.result.record.testedAt) / 1000));
  }, 180_000);

  it('install --verify-every on the running stack: the supervisor runs it at once, then on the interval; logs acceptance shows it', async () => {
    const bad = await runCli([...site.installArgs.filter((a) => a !== '--json'), '--verify-every', '10s']);
    expect(bad.exitCode).toBe(2);
    expect(String(bad.stderr)).toContain('--verify-every');
    const on = await runCli([...site.installArgs, '--verify-every', '30s']);
    expect(on.exitCode, String(on.stderr)).toBe(0);
    expect(readInstallConfig(site.dir).verifyEvery).toBe(30);
    const logs = await until(async () => String((await runCli(['logs', 'acceptance', '--dir', site.dir])).stdout), {
      what: 'a scheduled run in logs/acceptance.log',
      timeoutMs: 90_000,
      intervalMs: 1000,
      ok: (text) => /ACCEPTED: unchanged since /.test(text),
    });
    expect(logs).toContain(records().at(-1));
    // unchanged: the run wrote nothing
    expect(records()).toHaveLength(2);
    // status names the newest record and the schedule
    const status = JSON.parse(String((await runCli(['status', '--dir', site.dir, '--json'])).stdout)) as { result: { acceptance: { everySeconds: number | null; newest: { record: string; result: string } | null } } };
    expect(status.result.acceptance.everySeconds).toBe(30);
    expect(status.result.acceptance.newest).toMatchObject({ result: 'accepted', record: expect.stringContaining(records().at(-1)!) });
  }, 180_000);
});

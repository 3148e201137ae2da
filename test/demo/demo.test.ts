/**
 * `hospital-api demo` (npm start) through the real CLI on ephemeral ports:
 * a fresh run installs, loads, creates its consumer, verifies and prints a
 * curl that really returns the record; a second run reuses all of it; it never
 * touches an installation that is not a demo.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { freePort, isPortFree } from '../../src/util/port-check.js';
import { readInstallConfig } from '../../src/install-dir/install-config.js';
import { makeNativeInstall } from '../helpers/native-install.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readEnvFile } from '../../src/util/env-file.js';
import { PLATFORM_CARE_ID_SYSTEM } from '../../src/fhir-data/generate/model.js';

const dir = tempDir('hapi-demo-');
afterAll(async () => {
  await runCli(['down', '--dir', dir]);
  removeTempDirs();
});

async function portFlags(): Promise<string[]> {
  const names = ['--api-port', '--fhir-port', '--gateway-http-port', '--gateway-https-port', '--gateway-admin-port', '--metrics-port', '--platform-port'];
  const flags: string[] = [];
  for (const name of names) flags.push(name, String(await freePort()));
  return flags;
}

describe('hospital-api demo', () => {
  let curl = '';
  let rerunFlags: string[] = [];

  it('stops at a taken port, naming it and the component; the rerun completes the install', async () => {
    const flags = await portFlags();
    const fhirPort = Number(flags[flags.indexOf('--fhir-port') + 1]);
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(fhirPort, '127.0.0.1', r));
    try {
      const r = await runCli(['demo', '--dir', dir, '--patients', '3', '--sizes', '10-120', ...flags]);
      expect(r.exitCode).toBe(3);
      expect(String(r.stderr)).toContain(`ERR_RUNTIME_PORT_TAKEN: Port ${fhirPort} (127.0.0.1) needed by the fhir component`);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
    rerunFlags = flags;
  });

  it('installs, loads, verifies and prints a single-line curl that returns a real record', async () => {
    const r = await runCli(['demo', '--dir', dir, '--patients', '3', '--sizes', '10-120', ...rerunFlags]);
    const out = String(r.stdout);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(out).toContain('DEMO installation');
    expect(out).toContain('(fresh install)');
    expect(String(r.stderr)).toContain('DEMO MODE');
    expect(readInstallConfig(dir).demo).toBe(true);
    // The demo names the generated patients' care id system, so the record below is matched in it alone.
    expect(readEnvFile(installPaths(dir).apiEnv).PLATFORM_IDENTIFIER_SYSTEM).toBe(PLATFORM_CARE_ID_SYSTEM);
    curl = out.split('\n').find((l) => l.startsWith('curl '))!;
    expect(curl).toMatch(/^curl -sS -X POST 'http:\/\/localhost:\d+\/api\/patients' .* -d '\{"platformCareId":"[^"]+","token":"demo-[^"]+"\}'$/);

    const pasted = await execa('sh', ['-c', curl], { reject: false });
    expect(pasted.exitCode, pasted.stderr).toBe(0);
    const body = JSON.parse(pasted.stdout) as { resources: Array<{ resource: { resourceType: string } }> };
    expect(body.resources.some((e) => e.resource.resourceType === 'Patient')).toBe(true);
    expect(body.resources.length).toBeGreaterThanOrEqual(10);

    // this demo is not the default installation, so the commands it suggests name its folder, and they reach it
    const next = out.split('\n').find((l) => l.startsWith('Status: '))!;
    expect(next).toContain(`\`hospital-api down --dir ${installPaths(dir).root}\``);
    expect(next).not.toContain('npm stop');
    const status = /`hospital-api (status --dir [^`]+)`/.exec(next)![1]!.split(' ');
    const shown = await runCli([...status, '--json']);
    expect(shown.exitCode, String(shown.stderr)).toBe(0);
    expect(JSON.parse(String(shown.stdout)).ok).toBe(true);
  });

  it('reuses the install on a second run, with the same data and the same curl', async () => {
    const r = await runCli(['demo', '--dir', dir]);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stdout)).toContain('(reused install)');
    expect(String(r.stderr)).not.toContain('install (native');
    expect(String(r.stdout).split('\n').find((l) => l.startsWith('curl '))).toBe(curl);
  });

  it('npm stop (down) stops it, ports released', async () => {
    const config = readInstallConfig(dir);
    expect((await runCli(['down', '--dir', dir])).exitCode).toBe(0);
    for (const port of [config.ports.api, config.ports.fhir, config.ports.gatewayHttps, config.ports.gatewayAdmin]) {
      expect(await isPortFree(port), `port ${port}`).toBe(true);
    }
  });

  it('rejects bad first-run options before writing anything', async () => {
    const fresh = join(tempDir('hapi-demo-bad-'), 'never-created');
    const r = await runCli(['demo', '--dir', fresh, '--patients', '0']);
    expect(r.exitCode).toBe(2);
    expect(String(r.stderr)).toContain('--patients must be a whole number');
    expect(existsSync(fresh)).toBe(false);
    const runtime = await runCli(['demo', '--dir', fresh, '--runtime', 'podman']);
    expect(runtime.exitCode).toBe(2);
    expect(String(runtime.stderr)).toContain('--runtime must be docker or native, got "podman"');
    expect(existsSync(fresh)).toBe(false);
  });

  it('refuses to touch an installation that is not a demo', async () => {
    const prod = tempDir('hapi-not-demo-');
    await makeNativeInstall(prod);
    const r = await runCli(['demo', '--dir', prod]);
    expect(r.exitCode).toBe(2);
    expect(String(r.stderr)).toContain('ERR_RUNTIME_DEMO_REFUSED');
  });
});

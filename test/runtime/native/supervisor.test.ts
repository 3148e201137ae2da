/**
 * The supervisor through the real CLI (`up`, `status`, `logs`, `down`), with
 * stand-in components (fixtures/fake-components.mjs) so these tests exercise
 * supervision itself: spawn, health, restart on crash, refusal, clean stop.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { isPortFree } from '../../../src/util/port-check.js';
import { installPaths } from '../../../src/runtime/layout.js';
import { createNativeRuntime } from '../../../src/runtime/native/index.js';
import { isAlive } from '../../../src/runtime/native/state.js';
import type { ComponentState } from '../../../src/runtime/types.js';
import { makeNativeInstall } from './install-fixture.js';

const FAKE = fileURLToPath(new URL('./fixtures/fake-components.mjs', import.meta.url));
const env = { HOSPITAL_API_COMPONENT_BIN: FAKE };
const started: string[] = [];

async function up(dir: string) {
  started.push(dir);
  return runCli(['up', '--dir', dir], { env });
}

async function status(dir: string): Promise<ComponentState[]> {
  const r = await runCli(['status', '--dir', dir, '--json'], { env });
  expect(r.exitCode, String(r.stderr)).toBe(0);
  return (JSON.parse(String(r.stdout)) as { result: { components: ComponentState[] } }).result.components;
}

async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

afterEach(async () => {
  for (const dir of started.splice(0)) await runCli(['down', '--dir', dir], { env });
});
afterAll(removeTempDirs);

describe('native supervisor (real CLI, stand-in components)', () => {
  it('starts every component, restarts a killed one, and down leaves no process and no port', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    const r = await up(dir);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stdout)).toMatch(/^fhir\s+up\s+\d+/m);

    const first = await status(dir);
    expect(first.map((c) => [c.name, c.state])).toEqual([['fhir', 'up'], ['gateway', 'up'], ['api', 'up']]);
    const gateway = first.find((c) => c.name === 'gateway')!;
    expect(gateway.ports).toEqual([config.ports.gatewayAdmin, config.ports.gatewayHttp, config.ports.gatewayHttps]);
    const raw = JSON.parse(String((await runCli(['status', '--dir', dir, '--json'], { env })).stdout)) as { result: { supervisor: { pid: number } | null } };
    expect(isAlive(raw.result.supervisor?.pid)).toBe(true);
    const fhirPid = first.find((c) => c.name === 'fhir')!.pid!;
    expect(isAlive(fhirPid)).toBe(true);

    process.kill(fhirPid, 'SIGKILL');
    const after = await until(() => status(dir), (cs) => {
      const f = cs.find((c) => c.name === 'fhir')!;
      return f.state === 'up' && f.pid !== fhirPid;
    });
    const fhir = after.find((c) => c.name === 'fhir')!;
    expect(fhir.state).toBe('up');
    expect(fhir.pid).not.toBe(fhirPid);
    expect(fhir.restarts).toBe(1);

    const logs = await runCli(['logs', 'fhir', '--dir', dir], { env });
    expect(String(logs.stdout).match(/fake fhir ready/g)).toHaveLength(2);

    const pids = after.map((c) => c.pid!);
    const down = await runCli(['down', '--dir', dir], { env });
    expect(down.exitCode, String(down.stderr)).toBe(0);
    for (const pid of pids) expect(isAlive(pid), `pid ${pid}`).toBe(false);
    for (const port of Object.values(config.ports)) {
      expect(await isPortFree(port), `port ${port}`).toBe(true);
    }
    expect((await status(dir)).every((c) => c.state === 'down')).toBe(true);
    expect(isAlive(raw.result.supervisor?.pid)).toBe(false);
  });

  it('does not pass NODE_TLS_REJECT_UNAUTHORIZED on to the components', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    started.push(dir);
    const r = await runCli(['up', '--dir', dir], { env: { ...env, NODE_TLS_REJECT_UNAUTHORIZED: '0', HOSPITAL_API_MARKER: 'inherited' } });
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const components = await status(dir);
    expect(components.length).toBe(3);
    for (const c of components) {
      const environ = readFileSync(`/proc/${c.pid}/environ`, 'utf8').split('\0');
      expect(environ, c.name).toContain('HOSPITAL_API_MARKER=inherited'); // the env is inherited at all
      expect(environ.filter((e) => e.startsWith('NODE_TLS_REJECT_UNAUTHORIZED=')), c.name).toEqual([]);
    }
  });

  it('refuses to start when a port is taken, naming the port and the component, and starts nothing', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    const blocker: Server = createServer();
    await new Promise<void>((r) => blocker.listen(config.ports.gatewayHttps, '127.0.0.1', r));
    try {
      const r = await up(dir);
      expect(r.exitCode).toBe(3);
      expect(r.stderr).toContain('ERR_RUNTIME_PORT_TAKEN');
      expect(r.stderr).toContain(`Port ${config.ports.gatewayHttps}`);
      expect(r.stderr).toContain('gateway component');
      expect(await isPortFree(config.ports.fhir)).toBe(true);
    } finally {
      blocker.close();
    }
  });

  it('reports the API down until it has its key, and restart() starts it once the key is written', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir, { withKey: false });
    expect((await up(dir)).exitCode).toBe(0);
    const api = (await status(dir)).find((c) => c.name === 'api')!;
    expect(api.state).toBe('down');
    expect(api.detail).toContain('FHIR_API_KEY');
    expect(api.detail).toContain('consumer create');
    expect(await isPortFree(config.ports.api)).toBe(true);

    appendFileSync(installPaths(dir).apiEnv, 'FHIR_API_KEY="test-key-not-secret"\n');
    await createNativeRuntime(dir, config).restart('api');
    const now = (await status(dir)).find((c) => c.name === 'api')!;
    expect(now.state).toBe('up');
    expect(await isPortFree(config.ports.api)).toBe(false);
  });

  it('fails fast when a component crashes on every start, and leaves nothing running', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    started.push(dir);
    const r = await runCli(['up', '--dir', dir], { env: { ...env, FAKE_CRASH: 'fhir' } });
    expect(r.exitCode).toBe(1);
    expect(String(r.stderr)).toContain('ERR_RUNTIME_START_FAILED');
    expect(String(r.stderr)).toContain('fhir component did not start: exited with code 1');
    expect(String(r.stderr)).toContain('logs fhir');
    expect(await isPortFree(config.ports.gatewayAdmin)).toBe(true);
    expect((await status(dir)).every((c) => c.state === 'down')).toBe(true);
  });

  it('down still stops the components when the supervisor itself was killed', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    expect((await up(dir)).exitCode).toBe(0);
    const state = JSON.parse(readFileSync(join(installPaths(dir).run, 'state.json'), 'utf8')) as { supervisorPid: number };
    const pids = (await status(dir)).map((c) => c.pid!);
    process.kill(state.supervisorPid, 'SIGKILL');
    await until(async () => isAlive(state.supervisorPid), (alive) => !alive, 5_000);
    const orphans = await status(dir);
    expect(orphans.every((c) => c.state === 'down' && c.detail.includes('unsupervised'))).toBe(true);
    expect(pids.every(isAlive)).toBe(true);

    const again = await runCli(['up', '--dir', dir], { env });
    expect(again.exitCode).toBe(3);
    expect(String(again.stderr)).toContain('ERR_RUNTIME_PORT_TAKEN');

    expect((await runCli(['down', '--dir', dir], { env })).exitCode).toBe(0);
    for (const pid of pids) expect(isAlive(pid), `pid ${pid}`).toBe(false);
    expect(await isPortFree(config.ports.fhir)).toBe(true);
  });

  it('down with a stale state.json leaves alone the unrelated processes that now have its pids', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    mkdirSync(installPaths(dir).run, { recursive: true });
    const stranger = spawn('sleep', ['300'], { stdio: 'ignore', detached: true });
    try {
      const pid = stranger.pid!;
      const component = (name: string, pidStart?: string) => ({
        name, state: 'up', detail: 'x', pid, ports: [], startedAt: new Date().toISOString(), restarts: 0, version: '0', log: '/dev/null', ...(pidStart ? { pidStart } : {}),
      });
      // as an older run left it (no start times), then with start times of other processes
      for (const start of [undefined, '1']) {
        writeFileSync(join(installPaths(dir).run, 'state.json'), JSON.stringify({
          supervisorPid: pid, ...(start ? { supervisorStart: start } : {}), startedAt: new Date().toISOString(), demo: false,
          components: [component('fhir', start), component('gateway', start), component('api', start)],
        }));
        const down = await runCli(['down', '--dir', dir], { env });
        expect(down.exitCode, String(down.stderr)).toBe(0);
        await new Promise((r) => setTimeout(r, 300));
        expect(isAlive(pid), `sleep ${pid} after down (start ${start})`).toBe(true);
        expect((await status(dir)).every((c) => c.state === 'down' && c.pid === undefined)).toBe(true);
      }
    } finally {
      stranger.kill('SIGKILL');
    }
  });

  it('two concurrent `up` runs start one supervisor and one set of components', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    started.push(dir);
    // An oversized log from an earlier life is rotated when fhir starts.
    const fhirLog = join(installPaths(dir).logs, 'fhir.log');
    mkdirSync(installPaths(dir).logs, { recursive: true });
    writeFileSync(fhirLog, 'x'.repeat(11 * 1024 * 1024));
    const [a, b] = await Promise.all([runCli(['up', '--dir', dir], { env }), runCli(['up', '--dir', dir], { env })]);
    expect([a.exitCode, b.exitCode], `${String(a.stderr)}\n${String(b.stderr)}`).toEqual([0, 0]);
    const now = await status(dir);
    expect(now.map((c) => [c.name, c.state, c.restarts, c.detail])).toEqual(now.map((c) => [c.name, 'up', 0, c.detail]));
    const supervisors = readFileSync(join(installPaths(dir).logs, 'supervisor.log'), 'utf8');
    expect(supervisors.match(/another supervisor/g)?.length ?? 0).toBeLessThanOrEqual(1);
    expect(statSync(`${fhirLog}.1`).size).toBe(11 * 1024 * 1024);
    expect(readFileSync(fhirLog, 'utf8')).toMatch(/^fake fhir ready/);
  });

  it('rejects an unknown component and reports a stopped stack as down', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    const runtime = createNativeRuntime(dir, config);
    await expect(runtime.restart('api')).rejects.toMatchObject({ code: 'ERR_RUNTIME_NOT_RUNNING' });
    const logs = await runCli(['logs', 'nope', '--dir', dir], { env });
    expect(logs.exitCode).toBe(2);
    expect(logs.stderr).toContain('ERR_RUNTIME_UNKNOWN_COMPONENT');
    expect((await runtime.components()).map((c) => c.state)).toEqual(['down', 'down', 'down']);
  });
});

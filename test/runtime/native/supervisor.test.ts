/**
 * The supervisor: started as `up` starts it (startStack, a detached process)
 * but through a launcher (fixtures/supervisor.mjs) that gives the real
 * runSupervisor stand-in components (fixtures/fake-components.mjs) and short
 * watch times as options; `status`, `logs` and `down` are the real CLI. These
 * tests exercise supervision itself: spawn, health, restart on crash or hang,
 * restart requests, log rotation, refusal, clean stop.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { until } from '../../helpers/until.js';
import { isPortFree } from '../../../src/util/port-check.js';
import { installPaths } from '../../../src/install-dir/layout.js';
import { createNativeRuntime } from '../../../src/runtime/native/index.js';
import { isAlive } from '../../../src/runtime/native/state.js';
import type { ComponentState } from '../../../src/runtime/types.js';
import { makeNativeInstall } from '../../helpers/native-install.js';
import { readInstallConfig } from '../../../src/install-dir/install-config.js';
import { requestRestart, startStack } from '../../../src/runtime/native/control.js';
import type { SupervisorOptions } from '../../../src/runtime/native/supervisor.js';

const FAKE = fileURLToPath(new URL('./fixtures/fake-components.mjs', import.meta.url));
const SUPERVISOR = fileURLToPath(new URL('./fixtures/supervisor.mjs', import.meta.url));
const env = {};
const started: string[] = [];

function supervisorArgs(dir: string, options: SupervisorOptions = {}): string[] {
  return [SUPERVISOR, dir, JSON.stringify({ componentBin: FAKE, healthEveryMs: 300, hungAfterMs: 3_000, logCheckEveryMs: 300, ...options })];
}

/** `up` as the CLI runs it (startStack), with the test supervisor; `extraEnv` is what the supervisor inherits. */
/**
 * How long a stack may take to answer: in CI these files share 2 cores with five docker-tier
 * stacks installing at once, and one start took longer than 60 s there (it takes 1-3 s alone).
 * startStack's own time-out comes first, so a stack that never answers fails with its error.
 */
const STACK_START_MS = 150_000;

async function up(dir: string, options: SupervisorOptions = {}, extraEnv: Record<string, string> = {}) {
  started.push(dir);
  const saved = { ...process.env };
  Object.assign(process.env, extraEnv);
  try {
    return await startStack(dir, readInstallConfig(dir), { supervisorArgs: supervisorArgs(dir, options), timeoutMs: STACK_START_MS });
  } finally {
    for (const key of Object.keys(extraEnv)) {
      if (saved[key] === undefined) delete process.env[key];
      else process.env[key] = saved[key];
    }
  }
}

async function failure(p: Promise<unknown>): Promise<Error & { code: string; hint?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code: string; hint?: string };
  }
  throw new Error('expected a failure');
}

/** `status --json`, whose exit code must be 0 when every component runs (up or degraded) and 3 (systemctl's) otherwise. */
async function status(dir: string): Promise<ComponentState[]> {
  const r = await runCli(['status', '--dir', dir, '--json'], { env });
  const doc = JSON.parse(String(r.stdout)) as { result: { components: ComponentState[]; down: string[] } };
  const notRunning = doc.result.components.filter((c) => c.state !== 'up' && c.state !== 'degraded').map((c) => c.name);
  expect(doc.result.down).toEqual(notRunning);
  expect(r.exitCode, String(r.stderr)).toBe(notRunning.length > 0 ? 3 : 0);
  return doc.result.components;
}

afterEach(async () => {
  for (const dir of started.splice(0)) await runCli(['down', '--dir', dir], { env });
});
afterAll(removeTempDirs);

describe('native supervisor (real CLI, stand-in components)', { timeout: STACK_START_MS + 30_000 }, () => {
  it('starts every component, restarts a killed one, and down leaves no process and no port', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    const r = await up(dir);
    expect(r.components.map((c) => [c.name, c.state])).toEqual([['fhir', 'up'], ['gateway', 'up'], ['api', 'up']]);

    const first = await status(dir);
    expect(first.map((c) => [c.name, c.state])).toEqual([['fhir', 'up'], ['gateway', 'up'], ['api', 'up']]);
    const gateway = first.find((c) => c.name === 'gateway')!;
    expect(gateway.ports).toEqual([config.ports.gatewayAdmin, config.ports.gatewayHttp, config.ports.gatewayHttps]);
    const raw = JSON.parse(String((await runCli(['status', '--dir', dir, '--json'], { env })).stdout)) as { result: { supervisor: { pid: number } | null } };
    expect(isAlive(raw.result.supervisor?.pid)).toBe(true);
    const fhirPid = first.find((c) => c.name === 'fhir')!.pid!;
    expect(isAlive(fhirPid)).toBe(true);

    process.kill(fhirPid, 'SIGKILL');
    const after = await until(() => status(dir), {
      what: 'fhir up again under a new pid',
      timeoutMs: 20_000,
      intervalMs: 200,
      ok: (cs) => {
        const f = cs.find((c) => c.name === 'fhir')!;
        return f.state === 'up' && f.pid !== fhirPid;
      },
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
    await up(dir, {}, { NODE_TLS_REJECT_UNAUTHORIZED: '0', HOSPITAL_API_MARKER: 'inherited' });
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
      const err = await failure(up(dir));
      expect(err).toMatchObject({ code: 'ERR_RUNTIME_PORT_TAKEN' });
      expect(String(err)).toContain(`Port ${config.ports.gatewayHttps}`);
      expect(String(err)).toContain('gateway component');
      expect(await isPortFree(config.ports.fhir)).toBe(true);
    } finally {
      blocker.close();
    }
  });

  it('reports the API down until it has its key, and restart() starts it once the key is written', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir, { withKey: false });
    await up(dir);
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
    const err = await failure(up(dir, {}, { FAKE_CRASH: 'fhir' }));
    expect(err).toMatchObject({ code: 'ERR_RUNTIME_START_FAILED' });
    expect(String(err)).toContain('fhir component did not start: exited with code 1');
    expect(String(err.hint)).toContain('logs fhir');
    expect(await isPortFree(config.ports.gatewayAdmin)).toBe(true);
    expect((await status(dir)).every((c) => c.state === 'down')).toBe(true);
  });

  it('down still stops the components when the supervisor itself was killed', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    await up(dir);
    const state = JSON.parse(readFileSync(join(installPaths(dir).run, 'state.json'), 'utf8')) as { supervisorPid: number };
    const pids = (await status(dir)).map((c) => c.pid!);
    process.kill(state.supervisorPid, 'SIGKILL');
    await until(() => !isAlive(state.supervisorPid), { what: 'the supervisor gone', timeoutMs: 5_000, intervalMs: 200 });
    const orphans = await status(dir);
    expect(orphans.every((c) => c.state === 'down' && c.detail.includes('unsupervised'))).toBe(true);
    expect(pids.every(isAlive)).toBe(true);

    await expect(up(dir)).rejects.toMatchObject({ code: 'ERR_RUNTIME_PORT_TAKEN' });

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
    await Promise.all([up(dir), up(dir)]);
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

  it('replaces a component that is alive but does not answer its health URL (SIGSTOP)', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    await up(dir, { hungAfterMs: 2_000 });
    const before = (await status(dir)).find((c) => c.name === 'fhir')!;
    process.kill(before.pid!, 'SIGSTOP');
    try {
      const after = await until(() => status(dir), {
        what: 'the hung fhir replaced by a new one, up',
        timeoutMs: 30_000,
        intervalMs: 200,
        ok: (cs) => {
          const f = cs.find((c) => c.name === 'fhir')!;
          return f.state === 'up' && f.pid !== before.pid;
        },
      });
      const fhir = after.find((c) => c.name === 'fhir')!;
      expect(fhir.state).toBe('up');
      expect(fhir.pid).not.toBe(before.pid);
      expect(fhir.restarts).toBe(1);
      await until(() => !isAlive(before.pid), { what: 'the hung fhir gone', timeoutMs: 5_000, intervalMs: 200 });
      expect(isAlive(before.pid)).toBe(false);
      expect(readFileSync(join(installPaths(dir).logs, 'supervisor.log'), 'utf8')).toMatch(/fhir \(pid \d+\) alive but did not answer .* killed/);
    } finally {
      try { process.kill(before.pid!, 'SIGKILL'); } catch { /* replaced */ }
    }
  });

  it('rotates a component log past its size while the component runs, without restarting it', async () => {
    const dir = tempDir();
    await makeNativeInstall(dir);
    await up(dir, { logRotateBytes: 256 * 1024, logKeep: 2 }, { FAKE_CHATTY: 'gateway' });
    const pid = (await status(dir)).find((c) => c.name === 'gateway')!.pid;
    const log = join(installPaths(dir).logs, 'gateway.log');
    const exists = (p: string) => { try { statSync(p); return true; } catch { return false; } };
    await until(() => exists(`${log}.2`), { what: `${log}.2 rotated`, timeoutMs: 20_000, intervalMs: 200 });
    expect(exists(`${log}.1`)).toBe(true);
    expect(exists(`${log}.3`)).toBe(false); // logKeep generations only
    expect(statSync(`${log}.1`).size).toBeGreaterThan(256 * 1024);
    // The live log was truncated, not replaced: the component writes on into it.
    expect(statSync(log).size).toBeLessThan(4 * 1024 * 1024);
    const gateway = (await status(dir)).find((c) => c.name === 'gateway')!;
    expect(gateway.pid).toBe(pid);
    expect(gateway.restarts).toBe(0);
    // Rotation may have truncated the live log an instant ago: wait for the
    // component's next lines to land in it, through the same open file.
    const live = await until(() => readFileSync(log, 'utf8'), {
      what: `${log} written to again after rotation`,
      timeoutMs: 10_000,
      intervalMs: 100,
      ok: (text) => text.includes('fake gateway chatter'),
    });
    expect(live).toContain('fake gateway chatter');
    expect((await status(dir)).find((c) => c.name === 'gateway')!.pid).toBe(pid);
  });

  it('handles many concurrent restart requests, each answered by its own token, and keeps supervising', async () => {
    const dir = tempDir();
    const config = await makeNativeInstall(dir);
    const first = await up(dir);
    const supervisorPid = first.supervisorPid;
    const names = ['api', 'fhir', 'api', 'gateway', 'api', 'fhir', 'api', 'api'];
    const results = await Promise.allSettled(names.map((n) => requestRestart(dir, n, 40_000)));
    expect(results.map((r) => r.status), JSON.stringify(results.filter((r) => r.status === 'rejected'))).toEqual(names.map(() => 'fulfilled'));
    expect(isAlive(supervisorPid)).toBe(true);
    const now = await status(dir);
    expect(now.map((c) => c.state)).toEqual(['up', 'up', 'up']);
    // no request file is left behind, and a vanished one is not fatal
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(installPaths(dir).run).filter((f) => f.endsWith('.request'))).toEqual([]);
    writeFileSync(join(installPaths(dir).run, 'restart-api.gone-1.request'), 'x');
    rmSync(join(installPaths(dir).run, 'restart-api.gone-1.request'));
    process.kill(supervisorPid, 'SIGUSR2');
    await requestRestart(dir, 'api', 40_000);
    expect(isAlive(supervisorPid)).toBe(true);
    expect(await isPortFree(config.ports.api)).toBe(false);
  });
});

describe('supervisor lock', () => {
  it('lets exactly one of many contenders take over a stale lock', async () => {
    const { execa } = await import('execa');
    const lockModule = fileURLToPath(new URL('../../../dist/runtime/native/lock.js', import.meta.url));
    const script = `
      const { acquireSupervisorLock } = await import(${JSON.stringify(lockModule)});
      const start = Number(process.argv[2]);
      while (Date.now() < start) {}
      const holder = acquireSupervisorLock(process.argv[1]);
      process.stdout.write(holder === null ? 'won' : 'lost:' + holder);
      await new Promise((r) => setTimeout(r, 60_000));`;
    for (let round = 0; round < 4; round++) {
      const dir = tempDir();
      mkdirSync(installPaths(dir).run, { recursive: true });
      const dead = spawn('true');
      await new Promise((r) => dead.once('exit', r));
      writeFileSync(join(installPaths(dir).run, 'supervisor.lock'), `${dead.pid}\n`);
      const start = Date.now() + 1_200;
      // Every contender stays alive (holding or not) until all have decided: a holder that
      // exited would rightly make its lock stale again.
      const procs = Array.from({ length: 12 }, () => execa('node', ['--input-type=module', '-e', script, dir, String(start)], { reject: false }));
      const outcomes = await Promise.all(procs.map((p) => new Promise<string>((resolve) => {
        let out = '';
        p.stdout?.on('data', (d: Buffer) => { out += d.toString(); if (out) resolve(out); });
        void p.then(() => resolve(out));
      })));
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs);
      expect(outcomes.filter((o) => o === 'won'), `round ${round}: ${outcomes.join(' ')}`).toHaveLength(1);
    }
  });
});

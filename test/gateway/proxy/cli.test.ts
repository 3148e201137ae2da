/**
 * The real `hospital-api gateway` child: configured through its admin API,
 * a change taking effect on the next request, state surviving a restart,
 * `gateway export`, and SIGTERM closing cleanly.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { get as httpGet, type Server } from 'node:http';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { request } from 'undici';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { get, startUpstream, type Echo } from './harness.js';

interface Running {
  child: ResultPromise;
  admin: string;
  proxy: string;
}

async function startGateway(state: string, extra: string[] = []): Promise<Running> {
  const child = startCli(['gateway', '--admin-listen', '127.0.0.1:0', '--proxy-listen', '127.0.0.1:0', '--state', state, ...extra]);
  let err = '';
  const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready line: ${err}`)), 30_000);
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /gateway ready: admin=(\S+) proxy=(\S+) proxy-ssl=(\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    void child.then((r) => reject(new Error(`exited ${r.exitCode}: ${err}`)));
  });
  return { child, admin: `http://${ready[1]}`, proxy: `http://${ready[2]}` };
}

async function stopGateway(g: Running): Promise<number | undefined> {
  g.child.kill('SIGTERM');
  return (await g.child).exitCode;
}

async function post(url: string, body: Record<string, unknown>) {
  const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
}

describe('hospital-api gateway (child process)', () => {
  let upstream: { server: Server; port: number };
  const dir = tempDir();
  const state = join(dir, 'state.json');

  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterAll(() => {
    upstream.server.close();
    removeTempDirs();
  });

  it('is configured through its admin API, applies changes on the next request and keeps state across a restart', async () => {
    const g = await startGateway(state);
    try {
      expect((await post(`${g.admin}/services`, { name: 'fhir', url: `http://127.0.0.1:${upstream.port}/fhir` })).status).toBe(201);
      expect((await post(`${g.admin}/services/fhir/routes`, { name: 'r1', paths: ['/fhir-api-key-auth'] })).status).toBe(201);
      const open = await get(`${g.proxy}/fhir-api-key-auth/metadata`);
      expect((open.json() as unknown as Echo).url).toBe('/fhir/metadata');
      expect((await post(`${g.admin}/routes/r1/plugins`, { name: 'key-auth' })).status).toBe(201);
      expect((await get(`${g.proxy}/fhir-api-key-auth/metadata`)).status).toBe(401);
      expect((await post(`${g.admin}/consumers`, { username: 'alice' })).status).toBe(201);
      expect((await post(`${g.admin}/consumers/alice/key-auth`, { key: 'secret-key-1' })).status).toBe(201);
      expect((await get(`${g.proxy}/fhir-api-key-auth/metadata`, { headers: { apikey: 'secret-key-1' } })).status).toBe(200);
    } finally {
      expect(await stopGateway(g)).toBe(0);
    }
    const again = await startGateway(state);
    try {
      expect((await get(`${again.proxy}/fhir-api-key-auth/metadata`)).status).toBe(401);
      const ok = await get(`${again.proxy}/fhir-api-key-auth/metadata`, { headers: { apikey: 'secret-key-1' } });
      expect((ok.json() as unknown as Echo).headers['x-consumer-username']).toBe('alice');
    } finally {
      await stopGateway(again);
    }
    const exported = await runCli(['gateway', 'export', '--state', state]);
    expect(exported.exitCode).toBe(0);
    const doc = parse(String(exported.stdout)) as { _format_version: string; services: Array<{ name: string }> };
    expect(doc._format_version).toBe('3.0');
    expect(doc.services[0]?.name).toBe('fhir');
  }, 90_000);

  it('runs the proxy in worker processes that follow the state file', async () => {
    const g = await startGateway(join(dir, 'workers.json'), ['--workers', '2']);
    try {
      await post(`${g.admin}/services`, { name: 'w', url: `http://127.0.0.1:${upstream.port}/w` });
      await post(`${g.admin}/services/w/routes`, { paths: ['/w'] });
      let status = 0;
      for (let i = 0; i < 100 && status !== 200; i++) {
        status = (await get(`${g.proxy}/w/x`)).status;
        if (status !== 200) await new Promise((r) => setTimeout(r, 50));
      }
      expect(status).toBe(200);
      // A crashed worker is replaced; the proxy keeps answering.
      const workers = (await execa('pgrep', ['-P', String(g.child.pid)], { reject: false })).stdout.split('\n').filter(Boolean);
      expect(workers.length).toBe(2);
      process.kill(Number(workers[0]), 'SIGKILL');
      let now: string[] = [];
      for (let i = 0; i < 100; i++) {
        now = (await execa('pgrep', ['-P', String(g.child.pid)], { reject: false })).stdout.split('\n').filter(Boolean);
        if (now.length === 2 && !now.includes(workers[0] as string)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(now.length).toBe(2);
      expect(now).not.toContain(workers[0]);
      for (let i = 0; i < 4; i++) expect((await get(`${g.proxy}/w/x`)).status).toBe(200);
    } finally {
      expect(await stopGateway(g)).toBe(0);
    }
  }, 90_000);

  it('with --workers 2, rate-limiting counts once per gateway and a hand-broken state file shows as degraded in /status', async () => {
    const statePath = join(dir, 'rl.json');
    const g = await startGateway(statePath, ['--workers', '2']);
    try {
      await post(`${g.admin}/services`, { name: 'rl', url: `http://127.0.0.1:${upstream.port}/rl` });
      await post(`${g.admin}/services/rl/routes`, { name: 'rl-route', paths: ['/rl'] });
      expect((await post(`${g.admin}/routes/rl-route/plugins`, { name: 'rate-limiting', config: { minute: 3, limit_by: 'ip' } })).status).toBe(201);
      // Both workers have the plugin once the status says the newest version is applied everywhere.
      const version = async () => (await get(`${g.admin}/status`)).json() as { configuration_version: number; proxy: { appliedVersion: number | null; degraded: boolean; error: string | null } };
      let st = await version();
      for (let i = 0; i < 100 && st.proxy?.appliedVersion !== st.configuration_version; i++) {
        await new Promise((r) => setTimeout(r, 50));
        st = await version();
      }
      expect(st.proxy).toMatchObject({ appliedVersion: st.configuration_version, degraded: false });
      // A new connection per request: the cluster hands them to both workers in turn.
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) {
        const r = await new Promise<number>((resolve, reject) => {
          httpGet(`${g.proxy}/rl/x`, { agent: false }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          }).on('error', reject);
        });
        statuses.push(r);
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(3);
      expect(statuses.filter((s) => s === 429)).toHaveLength(5);

      // Hand-edit the state file: a plugin config its schema refuses (validateState refuses the file, or the proxy's
      // compile would). Workers keep the last good one and say so.
      const doc = JSON.parse(readFileSync(statePath, 'utf8')) as { version: number; config: { plugins: Array<{ config: Record<string, unknown> }> } };
      doc.version += 1;
      doc.config.plugins[0]!.config.minute = 'lots';
      writeFileSync(statePath, JSON.stringify(doc));
      st = await version();
      for (let i = 0; i < 100 && !st.proxy?.degraded; i++) {
        await new Promise((r) => setTimeout(r, 50));
        st = await version();
      }
      expect(st.proxy.degraded).toBe(true);
      expect(st.proxy.error).toMatch(/config\.minute/);
      expect((await get(`${g.proxy}/rl/x`)).status).toBe(429); // still the last good configuration, still limited
    } finally {
      expect(await stopGateway(g)).toBe(0);
    }
  }, 90_000);

  it('refuses an HTTPS listener without a certificate', async () => {
    const r = await runCli(['gateway', '--admin-listen', 'off', '--proxy-listen', 'off', '--proxy-ssl-listen', '127.0.0.1:0', '--state', join(dir, 'x.json')]);
    expect(r.exitCode).toBe(2);
    expect(String(r.stderr)).toContain('--proxy-ssl-listen needs --cert and --key');
  });

  it('refuses a --trusted-ips entry that is not an IP or CIDR', async () => {
    const r = await runCli(['gateway', '--admin-listen', 'off', '--proxy-listen', 'off', '--trusted-ips', '10.0.0.0/8,nope', '--state', join(dir, 'y.json')]);
    expect(r.exitCode).toBe(2);
    expect(String(r.stderr)).toContain('--trusted-ips: "nope" is not an IP address or CIDR range');
  });
});

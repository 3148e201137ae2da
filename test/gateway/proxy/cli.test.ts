/**
 * The real `hospital-api gateway` child: configured through its admin API,
 * a change taking effect on the next request, state surviving a restart,
 * `gateway export`, and SIGTERM closing cleanly.
 */
import type { Server } from 'node:http';
import { join } from 'node:path';
import { request } from 'undici';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { get, startUpstream, type Echo } from './harness.js';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';

type Running = GatewayProcess;
const startGateway = startGatewayProcess;


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

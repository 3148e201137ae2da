/**
 * `hospital-api gateway --headers` (Kong's `headers`, kong.conf.default): by
 * default Kong's own answers carry `Server: kong/x.y.z` and proxied ones
 * `Via: 1.1 kong/x.y.z`; with `off` (the docker runtime's KONG_HEADERS) neither
 * names Kong's version.
 */
import { join } from 'node:path';
import { request } from 'undici';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { startUpstream } from './harness.js';
import { startGatewayProcess as startGateway } from '../../helpers/gateway-process.js';


async function headersOf(url: string) {
  const res = await request(url);
  await res.body.dump();
  return { status: res.statusCode, server: res.headers.server, via: res.headers.via };
}

describe('gateway --headers', () => {
  let upstream: { server: Server; port: number };
  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterAll(() => {
    upstream.server.close();
    removeTempDirs();
  });

  it.each([
    ['default (server_tokens on)', [] as string[], true],
    ['off', ['--headers', 'off'], false],
    ['latency_tokens only', ['--headers', 'latency_tokens'], false],
  ])('%s', async (_name, extra, tokens) => {
    const state = join(tempDir(), 'state.json');
    // the state is made by a one-process gateway, then served by the one under test
    const setup = await startGateway(state, []);
    try {
      for (const [path, body] of [
        ['/services', { name: 'fhir', url: `http://127.0.0.1:${upstream.port}/fhir` }],
        ['/services/fhir/routes', { name: 'r1', paths: ['/fhir-api'] }],
      ] as const) {
        const r = await request(`${setup.admin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect(r.statusCode).toBe(201);
        await r.body.dump();
      }
    } finally {
      setup.child.kill('SIGTERM');
      await setup.child;
    }
    const g = await startGateway(state, extra);
    try {
      const proxied = await headersOf(`${g.proxy}/fhir-api/metadata`);
      const own = await headersOf(`${g.proxy}/no-such-route`);
      expect([proxied.status, own.status]).toEqual([200, 404]);
      if (tokens) {
        expect(proxied.via).toMatch(/^1\.1 kong\/\d+\.\d+\.\d+$/);
        expect(own.server).toMatch(/^kong\/\d+\.\d+\.\d+$/);
      } else {
        expect(proxied.via).toBeUndefined();
        expect(own.server).toBeUndefined();
      }
    } finally {
      g.child.kill('SIGTERM');
      await g.child;
    }
  });

  it('refuses an empty list', async () => {
    const r = await runCli(['gateway', '--headers', ' , ', '--state', join(tempDir(), 's.json')]);
    expect(r.exitCode).not.toBe(0);
    expect(String(r.stderr)).toContain('--headers');
  });
});

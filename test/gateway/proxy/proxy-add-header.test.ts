/**
 * Issue 48: Kong's injected `nginx_proxy_add_header`, as nginx's add_header
 * reads it, on the real gateway child: the header on proxied answers and the
 * gateway's own, every status with `always`, only nginx's list of statuses
 * without it; $KONG_NGINX_PROXY_ADD_HEADER as Kong reads it; a directive nginx
 * would refuse stops the start.
 */
import type { Server } from 'node:http';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProxyAddHeader } from '../../../src/gateway/proxy/proxy-add-header.js';
import { runCli } from '../../helpers/cli.js';
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { startUpstream } from './harness.js';

let upstream: { server: Server; port: number };
const running: GatewayProcess[] = [];

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  for (const g of running) g.child.kill('SIGTERM');
  await Promise.allSettled(running.map((g) => g.child));
  upstream.server.close();
  removeTempDirs();
});

async function gatewayWith(extra: string[], env?: Record<string, string>): Promise<GatewayProcess> {
  const state = join(tempDir('proxy-add-header-'), 'state.json');
  if (env) Object.assign(process.env, env);
  try {
    const g = await startGatewayProcess(state, extra);
    running.push(g);
    const post = (path: string, body: unknown) => request(`${g.admin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await post('/services', { name: 'up', url: `http://127.0.0.1:${upstream.port}` })).statusCode).toBe(201);
    expect((await post('/services/up/routes', { name: 'open', paths: ['/open'] })).statusCode).toBe(201);
    expect((await post('/services', { name: 'locked', url: `http://127.0.0.1:${upstream.port}` })).statusCode).toBe(201);
    expect((await post('/services/locked/routes', { name: 'locked', paths: ['/locked'] })).statusCode).toBe(201);
    expect((await post('/services/locked/plugins', { name: 'key-auth' })).statusCode).toBe(201);
    return g;
  } finally {
    if (env) for (const k of Object.keys(env)) delete process.env[k];
  }
}

async function headerOn(g: GatewayProcess, path: string): Promise<[number, string | undefined]> {
  const res = await request(`${g.proxy}${path}`);
  await res.body.dump();
  const v = res.headers['strict-transport-security'];
  return [res.statusCode, Array.isArray(v) ? v.join(',') : v];
}

describe('nginx_proxy_add_header', () => {
  it('`always`: on a proxied 200, the gateway\'s own 401 and its 404', async () => {
    const g = await gatewayWith(['--proxy-add-header', 'Strict-Transport-Security "max-age=63072000" always']);
    expect(await headerOn(g, '/open')).toEqual([200, 'max-age=63072000']);
    expect(await headerOn(g, '/locked')).toEqual([401, 'max-age=63072000']);
    expect(await headerOn(g, '/nowhere')).toEqual([404, 'max-age=63072000']);
  });

  it('without `always` only nginx\'s statuses (200 yes, 401 and 404 no); from $KONG_NGINX_PROXY_ADD_HEADER', async () => {
    const g = await gatewayWith([], { KONG_NGINX_PROXY_ADD_HEADER: "X-Site 'hospital'" });
    const res = await request(`${g.proxy}/open`);
    await res.body.dump();
    expect(res.headers['x-site']).toBe('hospital');
    const refused = await request(`${g.proxy}/locked`);
    await refused.body.dump();
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['x-site']).toBeUndefined();
  });

  it('none by default, as Kong', async () => {
    const g = await gatewayWith([]);
    expect(await headerOn(g, '/open')).toEqual([200, undefined]);
  });

  it('parses what nginx takes, Kong\'s several-directives form too, and refuses the rest (the gateway does not start)', async () => {
    expect(parseProxyAddHeader('Strict-Transport-Security "max-age=63072000" always')).toEqual([{ name: 'Strict-Transport-Security', value: 'max-age=63072000', always: true }]);
    expect(parseProxyAddHeader("Cache-Control 'no-store'; add_header X-A b")).toEqual([
      { name: 'Cache-Control', value: 'no-store', always: false },
      { name: 'X-A', value: 'b', always: false },
    ]);
    expect(parseProxyAddHeader('  ')).toEqual([]);
    for (const bad of ['Strict-Transport-Security', 'Bad Name "x"', 'X "unterminated', 'X "a" sometimes']) expect(() => parseProxyAddHeader(bad), bad).toThrow(/nginx_proxy_add_header/);
    const r = await runCli(['gateway', '--admin-listen', '127.0.0.1:0', '--proxy-listen', '127.0.0.1:0', '--state', join(tempDir('proxy-add-header-bad-'), 's.json'), '--proxy-add-header', 'X "a" sometimes']);
    expect(r.exitCode).toBe(2);
    expect(String(r.stderr)).toContain('nginx_proxy_add_header');
  });
});

/**
 * Scheduled acceptance on docker (issue 46), without an engine: the relay that the acceptance
 * service reaches Kong's admin API and the gateway's resolver through (a real unix socket, a real
 * HTTP stand-in for the admin API on an ephemeral port), and the docker runtime as the acceptance
 * service opens it (HOSPITAL_API_ACCEPTANCE_RELAY): admin calls through the relay, the components
 * from their own answers. On the real engine: test/docker-engine/stack.test.ts.
 */
import { statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayAdmin, relayResolve, startRelay } from '../../../src/runtime/docker/acceptance.js';
import { createDockerRuntime } from '../../../src/runtime/docker/index.js';
import { dockerSettings } from '../../../src/runtime/docker/render.js';
import { HospitalApiError } from '../../../src/errors/index.js';
import { installConfig } from '../../helpers/install-config.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

let admin: Server;
let api: Server;
let fhir: Server;
let relay: Server;
let socket: string;
const seen: Array<{ method: string; url: string; body: string }> = [];
let apiUp = true;

async function listen(handler: Parameters<typeof createServer>[1]): Promise<Server> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}
const port = (s: Server): number => (s.address() as AddressInfo).port;

beforeAll(async () => {
  admin = await listen((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, body });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(req.url === '/status' ? { database: { reachable: true } } : { method: req.method, url: req.url, body: body ? JSON.parse(body) : null }));
    });
  });
  api = await listen((req, res) => {
    if (!apiUp) return void req.socket.destroy();
    res.end(req.url === '/api/health-check' ? '{}' : 'no');
  });
  fhir = await listen((req, res) => {
    res.statusCode = req.url === '/fhir/metadata' ? 200 : 404;
    res.end('{"resourceType":"CapabilityStatement"}');
  });
  socket = join(tempDir('relay-'), 'relay.sock');
  relay = await startRelay(socket, `http://127.0.0.1:${port(admin)}`);
});

afterAll(async () => {
  for (const s of [admin, api, fhir, relay]) await new Promise((r) => s?.close(r));
  removeTempDirs();
});

const refused = async (f: () => Promise<unknown>): Promise<string> => {
  try {
    await f();
    return 'answered';
  } catch (err) {
    return err instanceof HospitalApiError ? err.code : String(err);
  }
};

describe('the acceptance relay (in kong\'s network namespace)', () => {
  it('forwards one admin read, and answers on a socket only its user may open', async () => {
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    expect(await relayAdmin(socket, 'GET', '/services?size=1000')).toEqual({ status: 200, body: { method: 'GET', url: '/services?size=1000', body: null } });
  });

  it('refuses every change (acceptance only reads), a path that could leave the admin API, and any other method, before calling it', async () => {
    const before = seen.length;
    for (const method of ['PUT', 'POST', 'PATCH', 'DELETE']) {
      expect(await refused(() => relayAdmin(socket, method, '/services/fhir', { name: 'fhir', url: 'http://elsewhere/' })), method).toBe('ERR_INSTALL_ADMIN_UNREACHABLE');
    }
    expect(await refused(() => relayAdmin(socket, 'GET', 'http://127.0.0.1:1/'))).toBe('ERR_INSTALL_ADMIN_UNREACHABLE');
    expect(await refused(() => relayAdmin(socket, 'GET', '//elsewhere/services'))).toBe('ERR_INSTALL_ADMIN_UNREACHABLE');
    expect(await refused(() => relayAdmin(socket, 'TRACE', '/services'))).toBe('ERR_INSTALL_ADMIN_UNREACHABLE');
    expect(seen.length).toBe(before);
  });

  it('resolves names where it runs; names from the caller never become object keys', async () => {
    const r = await relayResolve(socket, ['localhost', '127.1', '__proto__.invalid']);
    expect(r.get('127.1')).toEqual({ addresses: ['127.0.0.1'] });
    expect((r.get('localhost') as { addresses: string[] }).addresses).toContain('127.0.0.1');
    expect(r.get('__proto__.invalid')).toHaveProperty('error');
  });

  it('a relay that does not answer: the admin call fails with its stable code', async () => {
    expect(await refused(() => relayAdmin(join(tempDir('relay-'), 'none.sock'), 'GET', '/status'))).toBe('ERR_INSTALL_ADMIN_UNREACHABLE');
  });
});

describe('the docker runtime inside the acceptance service', () => {
  const config = () => installConfig({
    runtime: 'docker',
    ports: { api: port(api), fhir: port(fhir) },
    docker: { ...dockerSettings(['localhost'], undefined, { kongImage: 'kong:3.9.3@sha256:abcd' }), bindAddress: '127.0.0.1', fhirBindAddress: '127.0.0.1' },
  });

  it('calls the admin API through the relay, and reads the components from their answers, without the engine', async () => {
    // no docker binary at all: nothing here may reach for the engine
    const rt = createDockerRuntime(tempDir('inside-'), config(), { relaySocket: socket, binaries: { docker: '/nonexistent/docker', compose: ['/nonexistent/compose'] } });
    expect((await rt.admin('GET', '/routes')).body).toMatchObject({ url: '/routes' });
    const up = await rt.components();
    expect(up.map((c) => `${c.name} ${c.state}`)).toEqual(['fhir-door up', 'hapi up', 'hospital-api up', 'kong up', 'kong-database up']);
    apiUp = false;
    try {
      const down = await rt.components();
      expect(down.find((c) => c.name === 'hospital-api')).toMatchObject({ state: 'down' });
      expect(down.filter((c) => c.state !== 'up').map((c) => c.name)).toEqual(['hospital-api']);
    } finally {
      apiUp = true;
    }
    const versions = await rt.versions();
    expect(versions.find((v) => v.name === 'kong')).toEqual({ name: 'kong', version: '3.9.3', image: 'kong', tag: '3.9.3', digest: 'sha256:abcd' });
  });

  it('without the relay (on the host) the same runtime asks the engine', async () => {
    const rt = createDockerRuntime(tempDir('host-'), config(), { binaries: { docker: '/nonexistent/docker', compose: ['/nonexistent/compose'] } });
    expect(await refused(() => rt.components())).not.toBe('answered');
  });
});

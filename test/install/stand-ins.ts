/**
 * Test stand-ins for the components verify talks to: a FHIR server answering
 * /fhir/metadata, a Hospital API answering /api/health-check, and an HTTPS
 * gateway (real certificate) that applies key-auth and basic-auth from the
 * fake admin API's state. Real sockets on 127.0.0.1, ephemeral ports.
 */
import { createServer as createHttp, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import { freePort } from '../../src/util/port-check.js';
import type { InstallPorts } from '../../src/runtime/install-config.js';
import type { Runtime } from '../../src/runtime/types.js';
import type { KeyAndCert } from '../../src/tls/pki.js';
import type { FakeKong } from './fake-kong.js';

const CAPABILITY = { resourceType: 'CapabilityStatement', status: 'active', kind: 'instance', fhirVersion: '4.0.1' };

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
}

export async function testPorts(): Promise<InstallPorts> {
  return {
    api: await freePort(),
    fhir: await freePort(),
    gatewayHttp: await freePort(),
    gatewayHttps: await freePort(),
    gatewayAdmin: await freePort(),
    metrics: await freePort(),
  };
}

export function portFlags(p: InstallPorts): string[] {
  return [
    '--api-port', String(p.api), '--fhir-port', String(p.fhir), '--gateway-http-port', String(p.gatewayHttp),
    '--gateway-https-port', String(p.gatewayHttps), '--gateway-admin-port', String(p.gatewayAdmin), '--metrics-port', String(p.metrics),
  ];
}

/** Starts the three stand-ins; the gateway serves `server` (read at start). */
export async function startStandIns(kong: FakeKong, ports: InstallPorts, server: KeyAndCert): Promise<{ close(): Promise<void> }> {
  const fhir = createHttp((req, res) => (req.url === '/fhir/metadata' ? json(res, 200, CAPABILITY) : json(res, 404, {})));
  const api = createHttp((req, res) => (req.url === '/api/health-check' ? json(res, 200, {}) : json(res, 404, {})));
  const gateway = createHttps({ cert: server.certPem, key: server.keyPem }, (req: IncomingMessage, res) => {
    const url = req.url ?? '';
    if (url.startsWith('/fhir-api-key-auth/')) {
      const key = req.headers.apikey;
      if (!key) return json(res, 401, { message: 'No API key found in request' });
      if (!kong.keys.some((k) => k.key === key)) return json(res, 401, { message: 'Unauthorized' });
      return json(res, 200, CAPABILITY);
    }
    if (url.startsWith('/fhir-api/')) return json(res, 401, { message: 'Unauthorized' });
    return json(res, 404, { message: 'no Route matched with those values' });
  });
  await Promise.all([listen(fhir, ports.fhir), listen(api, ports.api), listen(gateway as unknown as Server, ports.gatewayHttps)]);
  const close = (s: { close(cb: () => void): void; closeAllConnections?: () => void }): Promise<void> =>
    new Promise((r) => {
      s.closeAllConnections?.();
      s.close(() => r());
    });
  return { close: async () => void (await Promise.all([close(fhir), close(api), close(gateway)])) };
}

/** A Runtime over the fake admin API whose components are the stand-ins. */
export function fakeRuntime(kong: FakeKong, restarts: string[] = []): Runtime {
  return {
    name: 'native',
    up: async () => {},
    down: async () => {},
    restart: async (c) => void restarts.push(c),
    components: async () =>
      ['fhir', 'gateway', 'api'].map((name) => ({ name, state: 'up' as const, detail: 'stand-in' })),
    versions: async () => [{ name: 'gateway', version: 'stand-in' }],
    admin: kong.admin,
  };
}

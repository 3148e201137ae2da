/**
 * `cert renew` where the gateway is published on several hosts (the swarm runtime's
 * Runtime.gatewayNodes): the renewal holds only when every host presents the new
 * certificate; one that does not, or a reload that fails, puts the previous files back and
 * reloads them, and says which host lagged. Two real TLS servers on two loopback
 * addresses (127.0.0.1 and 127.0.0.2) stand for two nodes; a runtime whose reload tells
 * each of them to load the install's files again, as a swarm deploy rolls each node's task.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renewCertificates } from '../../src/install/cert-renew.js';
import { installPaths } from '../../src/install-dir/layout.js';
import { readInstallConfig } from '../../src/install-dir/install-config.js';
import { isHospitalApiError } from '../../src/errors/index.js';
import type { Runtime } from '../../src/runtime/types.js';
import { installNative } from '../helpers/native-install.js';
import { runCli } from '../helpers/cli.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { fakeRuntime } from './stand-ins.js';

const dir = tempDir('hapi-renew-nodes-');
const paths = installPaths(dir);
const NODES = [
  { node: 'n1', address: '127.0.0.1' },
  { node: 'n2', address: '127.0.0.2' },
];
const servers: Server[] = [];

const tlsDigest = () => readdirSync(paths.tls).sort().map((f) => `${f}:${createHash('sha256').update(readFileSync(join(paths.tls, f))).digest('hex')}`).join('\n');
/** Loads the install's gateway certificate and key into a server, as a new task of that node would. */
const loadFiles = (server: Server) => server.setSecureContext({ cert: readFileSync(paths.gatewayCert), key: readFileSync(paths.gatewayKey) });

beforeAll(async () => {
  await installNative({ dir, host: 'localhost' });
  // the installed stack is not the one renewed here: the two servers below are its gateway
  await runCli(['down', '--dir', dir]);
  const port = readInstallConfig(dir).ports.gatewayHttps;
  for (const n of NODES) {
    const server = createServer({ cert: readFileSync(paths.gatewayCert), key: readFileSync(paths.gatewayKey) }, (_req, res) => res.end());
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, n.address, () => resolve()));
    servers.push(server);
  }
}, 120_000);

afterAll(async () => {
  for (const s of servers) await new Promise((resolve) => s.close(resolve));
  removeTempDirs();
});

/** A runtime publishing the gateway on both nodes, whose reload runs `reload` (the nodes it reloads, in turn). */
function twoNodeRuntime(reload: (call: number) => void): { runtime: Runtime; calls: () => number } {
  let calls = 0;
  const runtime: Runtime = {
    ...fakeRuntime({ admin: async () => ({ status: 200, body: {} }), state: () => ({}) } as never, [], [{ name: 'gateway', state: 'up', detail: '' }]),
    async reloadGatewayTls() {
      reload(++calls);
      return { connections: 'each task replaced in turn' };
    },
    gatewayNodes: async () => NODES,
  };
  return { runtime, calls: () => calls };
}

describe('cert renew on a gateway published by several hosts', () => {
  it('holds when every host presents the new certificate, and says so with what became of open connections', async () => {
    const lines: string[] = [];
    const { runtime, calls } = twoNodeRuntime(() => servers.forEach(loadFiles));
    const result = await renewCertificates(runtime, dir, {}, (t) => lines.push(t));
    expect(result.gatewayReloaded).toBe(true);
    expect(calls()).toBe(1);
    expect(lines.join('\n')).toMatch(/new certificate to new connections on 2 hosts \(n1, n2\), verified against the CA; each task replaced in turn/);
  });

  it('a host that keeps the old certificate: the previous files come back, are reloaded, and the lagging host is named', async () => {
    const before = tlsDigest();
    const presented = new X509Certificate(readFileSync(paths.gatewayCert)).fingerprint256;
    const lines: string[] = [];
    // the first reload reaches n1 only; the one that puts the old files back reaches both
    const { runtime, calls } = twoNodeRuntime((call) => (call === 1 ? loadFiles(servers[0]!) : servers.forEach(loadFiles)));
    const err = await renewCertificates(runtime, dir, {}, (t) => lines.push(t)).catch((e: unknown) => e);
    expect(isHospitalApiError(err) && err.code).toBe('ERR_CERT_NOT_PICKED_UP');
    expect(calls()).toBe(2);
    expect(tlsDigest()).toBe(before);
    expect(new X509Certificate(readFileSync(paths.gatewayCert)).fingerprint256).toBe(presented);
    expect(lines.join('\n')).toMatch(/did not take the new certificate \(not on n2\); the previous files are back and reloaded/);
  }, 60_000);

  it('a reload that fails (a deploy Swarm rolled back): the previous files come back and are reloaded; its error is the answer', async () => {
    const before = tlsDigest();
    const lines: string[] = [];
    const { runtime, calls } = twoNodeRuntime((call) => {
      if (call === 1) throw new Error('the update of kong ended rollback_completed');
      servers.forEach(loadFiles);
    });
    const err = await renewCertificates(runtime, dir, {}, (t) => lines.push(t)).catch((e: unknown) => e);
    expect((err as Error).message).toBe('the update of kong ended rollback_completed');
    expect(calls()).toBe(2);
    expect(tlsDigest()).toBe(before);
    expect(lines.join('\n')).toMatch(/did not take the new certificate \(the update of kong ended rollback_completed\); the previous files are back and reloaded/);
  });
});

/**
 * Test stand-ins for the components verify talks to: a FHIR server answering
 * /fhir/metadata, a Hospital API answering /api/health-check, and an HTTPS
 * gateway (real certificate) that applies key-auth and basic-auth as the
 * project's gateway admin API (test/helpers/gateway-admin.ts) says (a plugin removed or disabled there lets requests
 * through). `answers` changes what the API and FHIR stand-ins return, so tests
 * see checks fail as well as pass. Real sockets on 127.0.0.1, ephemeral ports.
 */
import { createServer as createHttp, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { InstallPorts } from '../../src/install-dir/install-config.js';
import { hostListener, resolveHere } from '../../src/runtime/gateway-reach.js';
import type { ComponentState, Runtime } from '../../src/runtime/types.js';
import { INTERMEDIATE_POLICY } from '../../src/tls/cipher-policy.js';
import type { KeyAndCert } from '../../src/tls/pki.js';
import { pluginEnforced, type GatewayAdmin } from '../helpers/gateway-admin.js';

const CAPABILITY = { resourceType: 'CapabilityStatement', status: 'active', kind: 'instance', fhirVersion: '4.0.1' };

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
}

// The installation's ports come from the shared install fixture.
export { testPorts } from '../helpers/native-install.js';
export { portFlags } from '../helpers/install-args.js';

/** What the API and FHIR stand-ins answer; change it between calls. */
export interface Answers {
  health: { status: number; body: unknown };
  metadata: { status: number; body: unknown };
}

export function intactAnswers(): Answers {
  return { health: { status: 200, body: {} }, metadata: { status: 200, body: CAPABILITY } };
}

/** True when `plugin` is attached, enabled, to the service named `service` in the admin API's state. */
const enforced = (kong: GatewayAdmin, service: string, plugin: string): boolean => pluginEnforced(kong.state(), service, plugin);

/** Starts the three stand-ins; the gateway serves `server` (read at start). */
export async function startStandIns(
  kong: GatewayAdmin,
  ports: InstallPorts,
  server: KeyAndCert,
  answers: Answers = intactAnswers(),
): Promise<{ close(): Promise<void>; answers: Answers }> {
  const send = (res: ServerResponse, a: { status: number; body: unknown }): void => json(res, a.status, a.body);
  const fhir = createHttp((req, res) => (req.url === '/fhir/metadata' ? send(res, answers.metadata) : json(res, 404, {})));
  const api = createHttp((req, res) => (req.url === '/api/health-check' ? send(res, answers.health) : json(res, 404, {})));
  // the TLS policy the product's gateway has (tls-policy passes on an intact stand-in)
  const gateway = createHttps({ ...INTERMEDIATE_POLICY, cert: server.certPem, key: server.keyPem }, (req: IncomingMessage, res) => {
    const url = req.url ?? '';
    if (url.startsWith('/fhir-api-key-auth/')) {
      if (enforced(kong, 'fhir-api-key-auth', 'key-auth')) {
        const key = req.headers.apikey;
        if (!key) return json(res, 401, { message: 'No API key found in request' });
        if (!kong.state().keyauth_credentials.some((k) => k.key === key)) return json(res, 401, { message: 'Unauthorized' });
      }
      return send(res, answers.metadata);
    }
    if (url.startsWith('/fhir-api/')) {
      // no basic-auth credentials exist in the admin state: with the plugin on, every request is refused
      if (enforced(kong, 'fhir-api', 'basic-auth')) return json(res, 401, { message: 'Unauthorized' });
      return send(res, answers.metadata);
    }
    return json(res, 404, { message: 'no Route matched with those values' });
  });
  await Promise.all([listen(fhir, ports.fhir), listen(api, ports.api), listen(gateway as unknown as Server, ports.gatewayHttps)]);
  const close = (s: { close(cb: () => void): void; closeAllConnections?: () => void }): Promise<void> =>
    new Promise((r) => {
      s.closeAllConnections?.();
      s.close(() => r());
    });
  return { answers, close: async () => void (await Promise.all([close(fhir), close(api), close(gateway)])) };
}

/** The stand-ins' component states as the fake runtime reports them; change them between calls. */
export function intactComponents(): ComponentState[] {
  return ['fhir', 'gateway', 'api'].map((name) => ({ name, state: 'up' as const, detail: 'stand-in' }));
}

/** A Runtime over the admin API whose components are the stand-ins (as `components` says). */
export function fakeRuntime(kong: GatewayAdmin, restarts: string[] = [], components: ComponentState[] = intactComponents()): Runtime {
  return {
    name: 'native',
    up: async () => {},
    down: async () => {},
    restart: async (c) => void restarts.push(c),
    components: async () => components.map((c) => ({ ...c })),
    versions: async () => [{ name: 'gateway', version: 'stand-in' }],
    admin: kong.admin,
    // the stand-ins run on this host: names resolve here, and the FHIR stand-in listens on loopback where install pointed the gateway
    gatewayResolve: resolveHere,
    fhirListeners: async () => {
      const fhir = kong.state().services.find((x) => x.name === 'fhir-api');
      return fhir ? [hostListener('FHIR server', '127.0.0.1', Number(fhir.port))] : [];
    },
    // not what the stand-ins are for: a test that needs one passes its own
    reloadApiKey: () => unused('reloadApiKey'),
    reloadGatewayTls: () => unused('reloadGatewayTls'),
    snapshotData: () => unused('snapshotData'),
    restoreData: () => unused('restoreData'),
    logs: () => unused('logs'),
    supervision: () => unused('supervision'),
    supervise: () => unused('supervise'),
  };
}

function unused(what: string): never {
  throw new Error(`the fake runtime has no ${what}`);
}

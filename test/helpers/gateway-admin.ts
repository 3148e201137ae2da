/**
 * The project's own gateway admin API (src/gateway/admin over the store in
 * src/gateway/store), started in-process on 127.0.0.1 with an ephemeral port
 * over a state file in a temp dir, with the project's plugin schemas. Tests
 * that provision or check a gateway run against it instead of a re-implemented
 * admin API. `admin` is reached over HTTP, as the native runtime reaches its
 * gateway; it records each call, and `failAfter` makes a call throw, as a
 * process killed part-way would leave things. `change` edits the store
 * directly, for states the admin API would refuse to make.
 */
import { join } from 'node:path';
import { request } from 'undici';
import { startAdminServer } from '../../src/gateway/admin/server.js';
import type { GatewayConfig } from '../../src/gateway/model/types.js';
import { PLUGIN_SCHEMAS } from '../../src/gateway/plugins/index.js';
import { openStore, type GatewayStore } from '../../src/gateway/store/index.js';
import type { AdminResponse, Runtime } from '../../src/runtime/types.js';
import { tempDir } from './tmp.js';

export interface GatewayAdmin {
  url: string;
  store: GatewayStore;
  admin: Runtime['admin'];
  /** `METHOD /path` of every call made through `admin`. */
  calls: string[];
  /** When set, the call after this many throws (and every later one). */
  failAfter: number | null;
  /** The current configuration (read-only). */
  state(): Readonly<GatewayConfig>;
  /** Edits the configuration in the store directly (a state the admin API refuses to make, or a quicker way to one it allows). */
  change(edit: (draft: GatewayConfig) => void): void;
  close(): Promise<void>;
}

export async function startGatewayAdmin(): Promise<GatewayAdmin> {
  const store = await openStore(join(tempDir('hapi-gateway-admin-'), 'gateway-state.json'));
  const server = await startAdminServer({ host: '127.0.0.1', port: 0, store, plugins: PLUGIN_SCHEMAS, version: '0.0.0-test' });
  const g: GatewayAdmin = {
    url: server.url,
    store,
    calls: [],
    failAfter: null,
    async admin(method, path, body): Promise<AdminResponse> {
      if (g.failAfter !== null && g.calls.length >= g.failAfter) throw new Error('killed part-way (test)');
      g.calls.push(`${method} ${path}`);
      const res = await request(server.url + path, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.body.text();
      return { status: res.statusCode, body: text ? JSON.parse(text) : null };
    },
    state: () => store.snapshot().config,
    change: (edit) => void store.transact(edit),
    close: () => server.close(),
  };
  return g;
}

/** True when `plugin` is attached, enabled, to the service named `service`. */
export function pluginEnforced(config: Readonly<GatewayConfig>, service: string, plugin: string): boolean {
  const svc = config.services.find((s) => s.name === service);
  return !!svc && config.plugins.some((p) => p.name === plugin && p.service?.id === svc.id && p.enabled !== false);
}

const open: GatewayAdmin[] = [];

/** startGatewayAdmin, remembered for closeGatewayAdmins (a file's afterAll). */
export async function gatewayAdmin(): Promise<GatewayAdmin> {
  const g = await startGatewayAdmin();
  open.push(g);
  return g;
}

export async function closeGatewayAdmins(): Promise<void> {
  await Promise.all(open.splice(0).map((g) => g.close()));
}

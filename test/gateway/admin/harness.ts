/** Starts a real admin API on 127.0.0.1:0 over a state file in a temp dir; requests go through undici. */
import { join } from 'node:path';
import { request } from 'undici';
import { startAdminServer } from '../../../src/gateway/admin/server.js';
import type { PluginSchemaDefinition } from '../../../src/gateway/model/types.js';
import { openStore, type GatewayStore } from '../../../src/gateway/store/index.js';
import { afterAll, afterEach, beforeEach } from 'vitest';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

/** A small stand-in plugin map: fills one default and reports one field error, in Kong's shape. */
export const STAND_IN_PLUGINS: ReadonlyMap<string, PluginSchemaDefinition> = new Map([
  [
    'key-auth',
    {
      name: 'key-auth',
      version: '3.9.1',
      priority: 1250,
      consumerScopable: false,
      validate: (c: unknown) => {
        const config = { key_names: ['apikey'], hide_credentials: false, ...(c as object) };
        return Array.isArray(config.key_names)
          ? { ok: true as const, config }
          : { ok: false as const, errors: { 'config.key_names': 'expected an array' } };
      },
    },
  ],
  [
    'rate-limiting',
    {
      name: 'rate-limiting',
      version: '3.9.1',
      priority: 910,
      consumerScopable: true,
      validate: (c: unknown) => {
        const config = { minute: null, policy: 'local', ...(c as Record<string, unknown>) };
        const m = config.minute;
        if (m !== null && !(typeof m === 'number' || /^\d+$/.test(String(m)))) return { ok: false as const, errors: { 'config.minute': 'expected a number' } };
        return { ok: true as const, config: { ...config, minute: m === null ? null : Number(m) } };
      },
    },
  ],
]);

/** The toolkit version the test admin servers are started with (GET / reports it as hospital_api_version). */
export const TOOLKIT_VERSION = '0.0.0-test';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

export interface Admin {
  url: string;
  dir: string;
  statePath: string;
  store: GatewayStore;
  call(method: string, path: string, body?: unknown, contentType?: string): Promise<Reply>;
  close(): Promise<void>;
}

export async function startAdmin(options: { dir?: string; plugins?: ReadonlyMap<string, PluginSchemaDefinition> } = {}): Promise<Admin> {
  const dir = options.dir ?? tempDir('gw-admin-');
  const statePath = join(dir, 'gateway-state.json');
  const store = await openStore(statePath);
  const server = await startAdminServer({ host: '127.0.0.1', port: 0, store, plugins: options.plugins ?? STAND_IN_PLUGINS, version: TOOLKIT_VERSION });
  return {
    url: server.url,
    dir,
    statePath,
    store,
    async call(method, path, body, contentType) {
      const isText = typeof body === 'string';
      const res = await request(server.url + path, {
        method: method as 'GET',
        headers: body === undefined ? {} : { 'content-type': contentType ?? (isText ? 'application/x-www-form-urlencoded' : 'application/json') },
        body: body === undefined ? undefined : isText ? body : JSON.stringify(body),
      });
      const text = await res.body.text();
      let json: unknown = undefined;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.statusCode, headers: res.headers, text, json };
    },
    close: () => server.close(),
  };
}

/**
 * A fresh admin API for each test of the calling file (beforeEach/afterEach),
 * temp dirs removed after the file. The returned object always points at the
 * current test's server.
 */
export function useFreshAdmin(): Pick<Admin, 'call'> & { readonly store: GatewayStore; readonly url: string } {
  let current: Admin | undefined;
  beforeEach(async () => {
    current = await startAdmin();
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  afterAll(() => removeTempDirs());
  const active = (): Admin => {
    if (!current) throw new Error('useFreshAdmin: no admin server outside a test');
    return current;
  };
  return {
    call: (...args) => active().call(...args),
    get store() {
      return active().store;
    },
    get url() {
      return active().url;
    },
  };
}

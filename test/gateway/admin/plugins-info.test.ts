import { describe, expect, it } from 'vitest';
import { PLUGIN_SCHEMAS } from '../../../src/gateway/plugins/index.js';
import { startAdmin, useFreshAdmin } from './harness.js';

const admin = useFreshAdmin();

describe('plugins (kong/db/schema/entities/plugins.lua)', () => {
  it('fills plugin defaults from the schema map and Kong entity defaults', async () => {
    await admin.call('POST', '/services', { name: 'fhir', host: 'up' });
    const p = await admin.call('POST', '/services/fhir/plugins', { name: 'key-auth' });
    expect(p.status).toBe(201);
    expect(p.json).toMatchObject({
      name: 'key-auth', instance_name: null, route: null, consumer: null, enabled: true, tags: null,
      protocols: ['grpc', 'grpcs', 'http', 'https'], config: { key_names: ['apikey'], hide_credentials: false },
    });
    expect(p.json.service.id).toBeTruthy();
  });

  it('rejects an unknown plugin with Kong message in fields.name', async () => {
    const r = await admin.call('POST', '/plugins', { name: 'no-such-plugin' });
    expect(r.status).toBe(400);
    expect(r.json.code).toBe(2);
    expect(r.json.fields).toEqual({ name: "plugin 'no-such-plugin' not enabled; add it to the 'plugins' configuration property" });
  });

  it('nests config errors under fields.config, from form bodies too', async () => {
    const r = await admin.call('POST', '/plugins', 'name=rate-limiting&config.minute=lots');
    expect(r.status).toBe(400);
    expect(r.json.fields).toEqual({ config: { minute: 'expected a number' } });
    expect(r.json.message).toBe('schema violation (config.minute: expected a number)');
    const ok = await admin.call('POST', '/plugins', 'name=rate-limiting&config.minute=5');
    expect(ok.json.config.minute).toBe(5);
  });

  it('allows one instance per (name, route, service, consumer): a duplicate is 409', async () => {
    await admin.call('POST', '/services', { name: 'fhir', host: 'up' });
    expect((await admin.call('POST', '/services/fhir/plugins', { name: 'key-auth' })).status).toBe(201);
    const dup = await admin.call('POST', '/services/fhir/plugins', { name: 'key-auth' });
    expect(dup.status).toBe(409);
    expect(dup.json.code).toBe(5);
    expect((await admin.call('POST', '/plugins', { name: 'key-auth' })).status).toBe(201); // global is another scope
  });

  it('refuses consumer scoping for key-auth (and allows it for rate-limiting)', async () => {
    await admin.call('POST', '/consumers', { username: 'alice' });
    const r = await admin.call('POST', '/consumers/alice/plugins', { name: 'key-auth' });
    expect(r.status).toBe(400);
    expect(r.json.fields).toEqual({ consumer: 'value must be null' });
    expect((await admin.call('POST', '/consumers/alice/plugins', { name: 'rate-limiting', config: { minute: 1 } })).status).toBe(201);
  });

  it('serves nested plugin endpoints, instance_name lookup, PATCH config merge and cascade on route delete', async () => {
    await admin.call('POST', '/services', { name: 'fhir', host: 'up' });
    await admin.call('POST', '/services/fhir/routes', { name: 'r', paths: ['/r'] });
    const p = await admin.call('POST', '/routes/r/plugins', { name: 'rate-limiting', instance_name: 'rl', config: { minute: 5 } });
    expect(p.status).toBe(201);
    expect((await admin.call('GET', '/routes/r/plugins')).json.data).toHaveLength(1);
    expect((await admin.call('GET', '/services/fhir/plugins')).json.data).toHaveLength(0);
    expect((await admin.call('GET', '/plugins/rl')).json.id).toBe(p.json.id);
    expect((await admin.call('GET', '/services/fhir/plugins/rl')).status).toBe(404);
    const patched = await admin.call('PATCH', '/plugins/rl', { config: { policy: 'local' }, enabled: false });
    expect(patched.json).toMatchObject({ enabled: false, config: { minute: 5, policy: 'local' } });
    expect((await admin.call('DELETE', '/routes/r')).status).toBe(204);
    expect((await admin.call('GET', '/plugins')).json.data).toEqual([]);
  });

  it('validates with the real plugin schemas (src/gateway/plugins)', async () => {
    const real = await startAdmin({ plugins: PLUGIN_SCHEMAS });
    try {
      const ka = await real.call('POST', '/plugins', { name: 'key-auth' });
      expect(ka.json.config).toMatchObject({ key_names: ['apikey'], hide_credentials: false, key_in_header: true });
      const rl = await real.call('POST', '/plugins', { name: 'rate-limiting', config: {} });
      expect(rl.status).toBe(400);
      expect(rl.json.code).toBe(2);
      expect(rl.json.fields.config).toBeTypeOf('object');
    } finally {
      await real.close();
    }
  });
});

describe('GET /, GET /status, GET /plugins/enabled (kong/api/routes/{kong,health,plugins}.lua)', () => {
  it('describes the node like Kong', async () => {
    await admin.call('POST', '/plugins', { name: 'key-auth' });
    const r = await admin.call('GET', '/');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      tagline: 'Welcome to kong',
      version: '3.9.1',
      edition: 'community',
      plugins: {
        available_on_server: { 'key-auth': { version: '3.9.1', priority: 1250 }, 'rate-limiting': { version: '3.9.1', priority: 910 } },
        enabled_in_cluster: ['key-auth'],
      },
    });
    for (const k of ['hostname', 'node_id', 'timers', 'lua_version', 'configuration', 'pids']) expect(r.json).toHaveProperty(k);
  });

  it('reports status counters and the plugin list', async () => {
    const s = await admin.call('GET', '/status');
    expect(s.json.database).toEqual({ reachable: true });
    expect(s.json.server.total_requests).toBeGreaterThanOrEqual(1);
    expect(s.json.server.connections_accepted).toBeGreaterThanOrEqual(1);
    expect(s.json.memory).toHaveProperty('workers_lua_vms');
    expect((await admin.call('GET', '/plugins/enabled')).json).toEqual({ enabled_plugins: ['key-auth', 'rate-limiting'] });
  });
});

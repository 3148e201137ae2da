/**
 * `hospital-api gateway --follow-state`: the gateway serves each new version of
 * its state file that another process writes (as a Kong node serves what another
 * node wrote to their shared database), keeps its last good configuration when
 * a version does not load, and makes an admin change on top of the newest file.
 */
import type { Server } from 'node:http';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../../src/gateway/model/types.js';
import { PLUGIN_SCHEMAS } from '../../src/gateway/plugins/index.js';
import { loadSnapshotFromFile, openStore } from '../../src/gateway/store/index.js';
import { insertEntity } from '../../src/gateway/store/repo.js';
import { writeState } from '../../src/gateway/store/state-file.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';
import { until } from '../helpers/until.js';
import { startGatewayChild, type GatewayChild } from './admin/child.js';
import { get, startUpstream } from './proxy/harness.js';

const c = { plugins: PLUGIN_SCHEMAS, coerce: false, passwords: 'hash' as const };

/** Another process's write: the file's newest version plus `change`, written by rename as the store writes it. */
async function writeFromOutside(path: string, change: (d: GatewayConfig) => void): Promise<number> {
  const store = await openStore(path);
  store.transact(change);
  store.close();
  return store.snapshot().version;
}

describe('gateway --follow-state (a real gateway process following a real state file)', () => {
  let upstream: { server: Server; port: number };
  let gw: GatewayChild;
  let state: string;

  beforeAll(async () => {
    upstream = await startUpstream();
    state = join(tempDir('gw-follow-'), 'state.json');
    await writeFromOutside(state, (d) => {
      insertEntity(d, 'services', { name: 'svc', url: `http://127.0.0.1:${upstream.port}/up` }, c);
      insertEntity(d, 'routes', { name: 'a', paths: ['/a'], service: { name: 'svc' } }, c);
    });
    gw = await startGatewayChild(state, ['--follow-state']);
  });

  afterAll(async () => {
    await gw?.kill();
    upstream?.server.close();
    removeTempDirs();
  });

  const status = async (path: string) => (await get(`${gw.proxy}${path}`)).status;
  const proxyHealth = async () => (await get(`${gw.admin}/status`)).json().proxy as { degraded: boolean; error: string | null; appliedVersion: number };

  it('serves a route another process adds to the file', async () => {
    expect(await status('/a')).toBe(200);
    expect(await status('/b')).toBe(404);
    await writeFromOutside(state, (d) => insertEntity(d, 'routes', { name: 'b', paths: ['/b'], service: { name: 'svc' } }, c));
    await until(() => status('/b'), { what: 'route /b served', ok: (s) => s === 200, timeoutMs: 5000, intervalMs: 20 });
    // and its admin API reads the same configuration
    expect((await get(`${gw.admin}/routes/b`)).status).toBe(200);
  });

  it('keeps the last good configuration when the file is broken, and takes the next good one', async () => {
    const good = loadSnapshotFromFile(state).version;
    const text = readFileSync(state, 'utf8');
    const doc = JSON.parse(text);
    doc.version = good + 1;
    doc.config.routes.push({ ...doc.config.routes[0], id: '11111111-1111-4111-8111-111111111111', name: 'c', paths: ['/c'], protocols: ['nope'] });
    writeFileSync(`${state}.tmp`, JSON.stringify(doc));
    renameSync(`${state}.tmp`, state);
    const health = await until(proxyHealth, { what: 'the broken file reported', ok: (h) => h.degraded, timeoutMs: 5000, intervalMs: 20 });
    expect(health.error).toMatch(/state file not applied: .*config\.routes\[2\]\.protocols/);
    expect(health.appliedVersion).toBe(good);
    expect(gw.stderr()).toMatch(/state file not applied, the last good configuration stays in use/);
    expect(await status('/a')).toBe(200);
    expect(await status('/b')).toBe(200);
    expect(await status('/c')).toBe(404);
    // the next good version is served, and the report clears
    doc.config.routes[2].protocols = ['http', 'https'];
    doc.version = good + 2;
    writeFileSync(`${state}.tmp`, JSON.stringify(doc));
    renameSync(`${state}.tmp`, state);
    await until(() => status('/c'), { what: 'route /c served', ok: (s) => s === 200, timeoutMs: 5000, intervalMs: 20 });
    expect((await proxyHealth()).degraded).toBe(false);
  });

  it('makes an admin change on top of the newest file', async () => {
    const res = await get(`${gw.admin}/consumers`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'via-admin' }) });
    expect(res.status).toBe(201);
    const config = loadSnapshotFromFile(state).config;
    expect(config.consumers.map((c) => c.username)).toEqual(['via-admin']);
    expect(config.routes.map((r) => r.name).sort()).toEqual(['a', 'b', 'c']);
  });
});

describe('the store in follow mode', () => {
  it('rereads a file changed on disk before a change, even before its watcher has run', async () => {
    const path = join(tempDir('gw-follow-store-'), 'state.json');
    const store = await openStore(path, { follow: true });
    try {
      store.transact((d) => insertEntity(d, 'consumers', { username: 'first' }, c));
      // another process writes version 7 with another consumer; no event-loop turn before the next change
      const other = structuredClone(loadSnapshotFromFile(path).config) as GatewayConfig;
      insertEntity(other, 'consumers', { username: 'from-outside' }, c);
      writeState(path, 7, other);
      store.transact((d) => insertEntity(d, 'consumers', { username: 'here' }, c));
      const onDisk = loadSnapshotFromFile(path);
      expect(onDisk.version).toBe(8);
      expect(onDisk.config.consumers.map((x) => x.username)).toEqual(['first', 'from-outside', 'here']);
    } finally {
      store.close();
    }
  });

  it('without follow, a file changed on disk is overwritten by the next change (the default is unchanged)', async () => {
    const path = join(tempDir('gw-nofollow-store-'), 'state.json');
    const store = await openStore(path);
    const other = structuredClone(loadSnapshotFromFile(path).config) as GatewayConfig;
    insertEntity(other, 'consumers', { username: 'from-outside' }, c);
    writeState(path, 7, other);
    store.transact((d) => insertEntity(d, 'consumers', { username: 'here' }, c));
    expect(loadSnapshotFromFile(path).config.consumers.map((x) => x.username)).toEqual(['here']);
  });
});

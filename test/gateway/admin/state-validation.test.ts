/**
 * Issue 12: "one bad value in the gateway's state file takes every route down
 * while status says up". The file is schema-checked on load (validateState):
 * the gateway refuses to start on it, naming the file and the field; a
 * process following the file keeps its last good snapshot and says why.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type { ConfigSnapshot } from '../../../src/gateway/model/types.js';
import { loadSnapshotFromFile, openStore, validateState, watchStateFile } from '../../../src/gateway/store/index.js';
import { insertEntity } from '../../../src/gateway/store/repo.js';
import { runCli } from '../../helpers/cli.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { STAND_IN_PLUGINS } from './harness.js';

afterAll(() => removeTempDirs());

const ctx = { plugins: STAND_IN_PLUGINS, coerce: false, passwords: 'hash' as const };

/** A valid state file written through the real store: a service, a route, a consumer with a key. */
async function validStateFile(): Promise<{ path: string; doc: any }> {
  const path = join(tempDir('gw-state-'), 'state.json');
  const store = await openStore(path);
  store.transact((d) => {
    insertEntity(d, 'services', { name: 'fhir', url: 'http://127.0.0.1:9/fhir' }, ctx);
    insertEntity(d, 'routes', { name: 'r', paths: ['/fhir'], service: { name: 'fhir' } }, ctx);
    insertEntity(d, 'consumers', { username: 'platform' }, ctx);
    insertEntity(d, 'keyauth_credentials', { key: 'k-secret-value-1', consumer: { username: 'platform' } }, ctx);
    insertEntity(d, 'upstreams', { name: 'pool' }, ctx);
    insertEntity(d, 'targets', { target: '10.0.0.1', upstream: { name: 'pool' } }, ctx);
  });
  return { path, doc: JSON.parse(readFileSync(path, 'utf8')) };
}

describe('validateState', () => {
  it('accepts what the store writes, keeping ids and timestamps', async () => {
    const { doc } = await validStateFile();
    const res = validateState(doc, STAND_IN_PLUGINS);
    expect(res.ok).toBe(true);
    if (!res.ok) return;
    expect(res.config.services[0]).toEqual(doc.config.services[0]);
    expect(res.config.targets[0]).toEqual(doc.config.targets[0]);
    expect(res.config.keyauth_credentials[0]).toEqual(doc.config.keyauth_credentials[0]);
  });

  it('names every bad field, dangling reference and duplicate, and never echoes a key', async () => {
    const { doc } = await validStateFile();
    doc.config.services[0].host = 'bad host!';
    doc.config.services[0].port = 'eighty';
    doc.config.routes[0].service = { id: '00000000-0000-4000-8000-000000000000' };
    doc.config.keyauth_credentials.push({ ...doc.config.keyauth_credentials[0], id: '11111111-1111-4111-8111-111111111111' });
    doc.config.consumers.push({ id: '22222222-2222-4222-8222-222222222222', username: null, custom_id: null, tags: null, created_at: 1, updated_at: 1 });
    doc.config.bogus = [];
    const res = validateState(doc, STAND_IN_PLUGINS);
    expect(res.ok).toBe(false);
    expect(res.errors).toEqual(
      expect.arrayContaining([
        'config.bogus: unknown collection',
        'config.services[0].host: invalid value: bad host!',
        'config.services[0].port: expected an integer',
        expect.stringMatching(/^config\.routes\[0\]\.service: the foreign key '\{id="00000000-0000-4000-8000-000000000000"\}' does not reference an existing 'services' entity/),
        "config.consumers[1]: at least one of these fields must be non-empty: 'custom_id', 'username'",
        'config.keyauth_credentials[1].key: another entity already has this value',
      ]),
    );
    expect(res.errors.join('\n')).not.toContain('k-secret-value-1');
    const noKey = structuredClone(doc);
    delete noKey.config.keyauth_credentials[0].key;
    expect(validateState(noKey, STAND_IN_PLUGINS).errors).toContain('config.keyauth_credentials[0].key: required in the state file');
    expect(validateState({ format: 'x', version: -1 }).errors).toEqual(['format: expected "hospital-api-gateway-state/1"', 'version: must be a non-negative integer']);
  });
});

describe('loading an invalid state file', () => {
  it('openStore and loadSnapshotFromFile refuse it with ERR_GATEWAY_STATE_INVALID naming the file and the field', async () => {
    const { path, doc } = await validStateFile();
    doc.config.routes[0].paths = ['no-leading-slash'];
    writeFileSync(path, JSON.stringify(doc));
    expect(() => loadSnapshotFromFile(path)).toThrow(expect.objectContaining({ code: 'ERR_GATEWAY_STATE_INVALID' }));
    await expect(openStore(path)).rejects.toThrow(`${path}`);
    await expect(openStore(path)).rejects.toThrow('config.routes[0].paths: should start with: / (fixed path) or ~/ (regex path)');
  });

  it('hospital-api gateway will not start on it: a clear error, non-zero exit, nothing listening', { timeout: 60_000 }, async () => {
    const { path, doc } = await validStateFile();
    doc.config.services[0].host = 'bad host!';
    writeFileSync(path, JSON.stringify(doc));
    const res = await runCli(['gateway', '--admin-listen', '127.0.0.1:0', '--proxy-listen', '127.0.0.1:0', '--proxy-ssl-listen', 'off', '--state', path], {
      timeout: 30_000,
    });
    expect(res.exitCode).toBe(3);
    expect(res.stderr).toContain(path);
    expect(res.stderr).toContain('config.services[0].host: invalid value: bad host!');
    expect(res.stderr).not.toContain('gateway ready');
  });

  it('a process following the file keeps the last good snapshot and reports the bad one', async () => {
    const { path, doc } = await validStateFile();
    const seen: ConfigSnapshot[] = [];
    const errors: Error[] = [];
    const stop = watchStateFile(path, (s) => seen.push(s), (e) => errors.push(e));
    try {
      const bad = structuredClone(doc);
      bad.version += 1;
      bad.config.services[0].port = 70000;
      writeFileSync(path, JSON.stringify(bad));
      for (let i = 0; i < 200 && errors.length === 0; i++) await sleep(10);
      expect(errors[0]?.message).toContain('config.services[0].port: value should be between 0 and 65535');
      expect(seen).toEqual([]);
      const good = structuredClone(doc);
      good.version += 2;
      good.config.services[0].port = 8080;
      writeFileSync(path, JSON.stringify(good));
      for (let i = 0; i < 200 && seen.length === 0; i++) await sleep(10);
      expect(seen.map((s) => s.config.services[0]?.port)).toEqual([8080]);
    } finally {
      stop();
    }
  });
});

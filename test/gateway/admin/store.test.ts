import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { insertEntity } from '../../../src/gateway/store/repo.js';
import { loadSnapshotFromFile, openStore, watchStateFile } from '../../../src/gateway/store/index.js';
import type { ConfigSnapshot } from '../../../src/gateway/model/types.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { startAdmin, STAND_IN_PLUGINS } from './harness.js';

afterAll(() => removeTempDirs());

const ctx = { plugins: STAND_IN_PLUGINS, coerce: false, passwords: 'hash' as const };

describe('state file (issue 3: one file, written atomically)', () => {
  it('survives a restart: close, reopen, same entities and version', async () => {
    const first = await startAdmin();
    await first.call('POST', '/services', { name: 'fhir', url: 'http://up:8080/fhir' });
    await first.call('POST', '/services/fhir/routes', { name: 'r', paths: ['/fhir'] });
    await first.call('POST', '/consumers', { username: 'alice' });
    const key = await first.call('POST', '/consumers/alice/key-auth', {});
    const before = first.store.snapshot();
    await first.close();

    const second = await startAdmin({ dir: first.dir });
    try {
      expect(second.store.snapshot().version).toBe(before.version);
      expect(second.store.snapshot().config).toEqual(before.config);
      expect((await second.call('GET', '/consumers/alice/key-auth')).json.data[0].key).toBe(key.json.key);
      expect((await second.call('GET', '/services/fhir/routes/r')).status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('bumps the version on every commit, writes mode 0600 and leaves no temp files', async () => {
    const admin = await startAdmin();
    try {
      const v0 = admin.store.snapshot().version;
      await admin.call('POST', '/services', { name: 'a', host: 'h' });
      await admin.call('PATCH', '/services/a', { retries: 1 });
      await admin.call('DELETE', '/services/a');
      expect(admin.store.snapshot().version).toBe(v0 + 3);
      expect(JSON.parse(readFileSync(admin.statePath, 'utf8')).version).toBe(v0 + 3);
      expect(statSync(admin.statePath).mode & 0o777).toBe(0o600);
      expect(readdirSync(admin.dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    } finally {
      await admin.close();
    }
  });

  it('a failed change changes nothing: same snapshot, same version, file byte-identical', async () => {
    const admin = await startAdmin();
    try {
      await admin.call('POST', '/services', { name: 'a', host: 'h' });
      await admin.call('POST', '/services/a/routes', { name: 'r', paths: ['/a'] });
      const bytes = readFileSync(admin.statePath);
      const snap = admin.store.snapshot();
      const failures = [
        await admin.call('POST', '/services', { name: 'a', host: 'h' }), // 409
        await admin.call('POST', '/routes', { paths: ['/x'], service: { name: 'ghost' } }), // 400 code 13
        await admin.call('DELETE', '/services/a'), // restricted by its route
        await admin.call('PATCH', '/services/a', { port: 'x' }),
        await admin.call('POST', '/config', { _format_version: '3.0', services: [{ name: 'z' }] }),
      ];
      expect(failures.map((f) => f.status)).toEqual([409, 400, 400, 400, 400]);
      expect(admin.store.snapshot()).toBe(snap);
      expect(readFileSync(admin.statePath).equals(bytes)).toBe(true);
      // A change that throws inside transact after editing the draft leaves memory untouched too.
      expect(() =>
        admin.store.transact((draft) => {
          insertEntity(draft, 'services', { name: 'half', host: 'h' }, ctx);
          throw new Error('abort');
        }),
      ).toThrow('abort');
      expect(admin.store.snapshot().config.services.map((s) => s.name)).toEqual(['a']);
      expect(readFileSync(admin.statePath).equals(bytes)).toBe(true);
    } finally {
      await admin.close();
    }
  });

  it('a write that fails is reported with a coded error and changes nothing', async () => {
    const dir = tempDir('gw-store-');
    const statePath = join(dir, 'state.json');
    const store = await openStore(statePath);
    const snap = store.snapshot();
    // Put a non-empty directory where the file was, so the final rename fails.
    rmSync(statePath);
    mkdirSync(join(statePath, 'blocker'), { recursive: true });
    expect(() => store.transact((d) => insertEntity(d, 'consumers', { username: 'x' }, ctx))).toThrow(/Cannot write/);
    expect(store.snapshot()).toBe(snap);
    expect(readdirSync(dir)).toEqual(['state.json']);
  });

  it('notifies subscribers in process and watchers in other processes (via the file)', async () => {
    const dir = tempDir('gw-store-');
    const statePath = join(dir, 'state.json');
    const store = await openStore(statePath);
    const seen: number[] = [];
    const unsubscribe = store.subscribe((s) => seen.push(s.version));
    const watched = new Promise<ConfigSnapshot>((resolve) => {
      const stop = watchStateFile(statePath, (s) => {
        stop();
        resolve(s);
      });
    });
    store.transact((d) => insertEntity(d, 'consumers', { username: 'alice' }, ctx));
    unsubscribe();
    store.transact((d) => insertEntity(d, 'consumers', { username: 'bob' }, ctx));
    expect(seen).toEqual([1]);
    const fromFile = await watched;
    expect(fromFile.version).toBeGreaterThanOrEqual(1);
    expect(loadSnapshotFromFile(statePath).config.consumers.map((c) => c.username)).toEqual(['alice', 'bob']);
  });

  it('refuses a corrupt state file with a coded error', async () => {
    const dir = tempDir('gw-store-');
    const statePath = join(dir, 'state.json');
    writeFileSync(statePath, '{"format":"something-else"}');
    await expect(openStore(statePath)).rejects.toMatchObject({ code: 'ERR_GATEWAY_STATE_INVALID' });
    writeFileSync(statePath, '{not json');
    expect(() => loadSnapshotFromFile(statePath)).toThrow(/not valid/);
  });
});

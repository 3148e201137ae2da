import { describe, expect, it } from 'vitest';
import type { KongError } from '../../../src/gateway/model/kong-error.js';
import { verifyBasicAuthPassword } from '../../../src/gateway/model/password.js';
import { insertEntity } from '../../../src/gateway/store/repo.js';
import { useFreshAdmin, STAND_IN_PLUGINS } from './harness.js';

const ctx = { plugins: STAND_IN_PLUGINS, coerce: false, passwords: 'hash' as const };

const admin = useFreshAdmin();

describe('consumers (kong/db/schema/entities/consumers.lua)', () => {
  it('requires username or custom_id, keeps both unique, filters by custom_id', async () => {
    const none = await admin.call('POST', '/consumers', {});
    expect(none.status).toBe(400);
    expect(none.json.fields).toEqual({ '@entity': ["at least one of these fields must be non-empty: 'custom_id', 'username'"] });
    const alice = await admin.call('POST', '/consumers', { username: 'alice', custom_id: 'c-1' });
    expect(alice.json).toMatchObject({ username: 'alice', custom_id: 'c-1', tags: null });
    expect(Number.isInteger(alice.json.updated_at)).toBe(true);
    expect((await admin.call('POST', '/consumers', { username: 'alice' })).status).toBe(409);
    expect((await admin.call('POST', '/consumers', { username: 'bob', custom_id: 'c-1' })).status).toBe(409);
    await admin.call('POST', '/consumers', { username: 'bob' });
    const filtered = await admin.call('GET', '/consumers?custom_id=c-1');
    expect(filtered.json).toEqual({ data: [alice.json], next: null });
  });
});

describe('key-auth credentials (kong/plugins/key-auth/daos.lua)', () => {
  it('auto-generates a 32-char alphanumeric key, unique across consumers', async () => {
    const c = await admin.call('POST', '/consumers', { username: 'alice' });
    const k = await admin.call('POST', '/consumers/alice/key-auth', {});
    expect(k.status).toBe(201);
    expect(k.json.key).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(k.json).toMatchObject({ consumer: { id: c.json.id }, ttl: null, tags: null });
    const k2 = await admin.call('POST', '/consumers/alice/key-auth', {});
    expect(k2.json.key).not.toBe(k.json.key);
    await admin.call('POST', '/consumers', { username: 'bob' });
    const dup = await admin.call('POST', '/consumers/bob/key-auth', { key: k.json.key });
    expect(dup.status).toBe(409);
    expect(dup.json.fields).toEqual({ key: k.json.key });
    // The error object itself (what a CLI would log) never carries the key.
    let thrown: unknown;
    try {
      admin.store.transact((d) => insertEntity(d, 'keyauth_credentials', { key: k.json.key, consumer: { username: 'bob' } }, ctx));
    } catch (err) {
      thrown = err;
    }
    expect(String((thrown as Error).message)).not.toContain(k.json.key);
    expect(JSON.stringify((thrown as KongError).body)).toContain(k.json.key);
  });

  it('finds a credential by id or key under its consumer, lists it globally, and 404s elsewhere', async () => {
    await admin.call('POST', '/consumers', { username: 'alice' });
    await admin.call('POST', '/consumers', { username: 'bob' });
    const k = await admin.call('POST', '/consumers/alice/key-auth', { key: 'secret-key-1' });
    expect((await admin.call('GET', '/consumers/alice/key-auth/secret-key-1')).json.id).toBe(k.json.id);
    expect((await admin.call('GET', `/consumers/alice/key-auth/${k.json.id}`)).json.key).toBe('secret-key-1');
    expect((await admin.call('GET', '/consumers/bob/key-auth/secret-key-1')).status).toBe(404);
    expect((await admin.call('POST', '/consumers/nobody/key-auth', {})).status).toBe(404);
    expect((await admin.call('GET', '/consumers/nobody/key-auth')).json).toEqual({ message: 'Not found' });
    expect((await admin.call('GET', '/key-auths')).json.data.map((x: { id: string }) => x.id)).toEqual([k.json.id]);
    expect((await admin.call('GET', '/consumers/bob/key-auth')).json.data).toEqual([]);
    expect((await admin.call('DELETE', '/consumers/alice/key-auth/secret-key-1')).status).toBe(204);
    expect((await admin.call('GET', '/key-auths')).json.data).toEqual([]);
  });
});

describe('basic-auth credentials (kong/plugins/basic-auth/daos.lua, docs/gateway-admin.md hash choice)', () => {
  it('stores and returns a hash, never the password, and the hash verifies', async () => {
    const c = await admin.call('POST', '/consumers', { username: 'alice' });
    const missing = await admin.call('POST', '/consumers/alice/basic-auth', { username: 'alice' });
    expect(missing.json.fields).toEqual({ password: 'required field missing' });
    const b = await admin.call('POST', '/consumers/alice/basic-auth', { username: 'alice-login', password: 'correct horse' });
    expect(b.status).toBe(201);
    expect(b.json.password).not.toBe('correct horse');
    expect(b.json.password).toMatch(/^scrypt\$/);
    expect(verifyBasicAuthPassword('correct horse', c.json.id, b.json.password)).toBe(true);
    expect(verifyBasicAuthPassword('wrong', c.json.id, b.json.password)).toBe(false);
    const listed = await admin.call('GET', '/basic-auths');
    expect(listed.json.data[0].password).toBe(b.json.password);
    expect(JSON.stringify(admin.store.snapshot().config)).not.toContain('correct horse');
    // A PATCH that does not touch the password keeps the same hash (no re-hashing of the hash).
    const p = await admin.call('PATCH', '/consumers/alice/basic-auth/alice-login', { tags: ['t'] });
    expect(p.json.password).toBe(b.json.password);
    const p2 = await admin.call('PATCH', '/consumers/alice/basic-auth/alice-login', { password: 'new one' });
    expect(verifyBasicAuthPassword('new one', c.json.id, p2.json.password)).toBe(true);
    expect((await admin.call('POST', '/consumers/alice/basic-auth', { username: 'alice-login', password: 'x' })).status).toBe(409);
  });
});

describe('acls (kong/plugins/acl/daos.lua)', () => {
  it('adds groups per consumer, looks them up by group, rejects a duplicate group for the same consumer', async () => {
    await admin.call('POST', '/consumers', { username: 'alice' });
    const a = await admin.call('POST', '/consumers/alice/acls', { group: 'readers' });
    expect(a.status).toBe(201);
    expect(a.json).toMatchObject({ group: 'readers', tags: null });
    expect((await admin.call('GET', '/consumers/alice/acls/readers')).json.id).toBe(a.json.id);
    expect((await admin.call('POST', '/consumers/alice/acls', { group: 'readers' })).status).toBe(409);
    expect((await admin.call('POST', '/consumers/alice/acls', {})).json.fields).toEqual({ group: 'required field missing' });
    expect((await admin.call('GET', '/acls')).json.data).toHaveLength(1);
  });

  it('deleting a consumer cascades to its credentials and plugins', async () => {
    await admin.call('POST', '/consumers', { username: 'alice' });
    await admin.call('POST', '/consumers/alice/key-auth', {});
    await admin.call('POST', '/consumers/alice/basic-auth', { username: 'u', password: 'p' });
    await admin.call('POST', '/consumers/alice/acls', { group: 'g' });
    await admin.call('POST', '/consumers/alice/plugins', { name: 'rate-limiting', config: { minute: 5 } });
    expect((await admin.call('DELETE', '/consumers/alice')).status).toBe(204);
    for (const path of ['/key-auths', '/basic-auths', '/acls', '/plugins']) {
      expect((await admin.call('GET', path)).json.data, path).toEqual([]);
    }
  });
});

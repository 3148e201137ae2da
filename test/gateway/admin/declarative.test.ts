import { readFileSync } from 'node:fs';
import AjvDraft04Module from 'ajv-draft-04';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exportDeclarative, kongHashedCredentials, parseDeclarative } from '../../../src/gateway/declarative/index.js';
import type { KongError } from '../../../src/gateway/model/kong-error.js';
import { hashBasicAuthPassword, kongSha1Password, verifyBasicAuthPassword } from '../../../src/gateway/model/password.js';
import { PLUGIN_SCHEMAS } from '../../../src/gateway/plugins/index.js';
import { removeTempDirs } from '../../helpers/tmp.js';
import { startAdmin, type Admin } from './harness.js';

const schema = JSON.parse(readFileSync(new URL('../../fixtures/schemas/kong-declarative-config.json', import.meta.url), 'utf8'));
// ajv-draft-04 is CommonJS: under NodeNext its class is the `default` export of the default import.
const AjvDraft04 = (AjvDraft04Module as unknown as { default?: typeof AjvDraft04Module.default }).default ?? AjvDraft04Module.default;
const ajv = new AjvDraft04({ allErrors: true, strict: false });
const validateKongFile = ajv.compile(schema);
const deck14Schema = JSON.parse(readFileSync(new URL('../../fixtures/schemas/deck-1.4.0-content.json', import.meta.url), 'utf8'));
const validateDeck14File = new AjvDraft04({ allErrors: true, strict: false }).compile(deck14Schema);

const DOC = {
  _format_version: '3.0',
  services: [
    {
      name: 'fhir-api-key-auth',
      url: 'http://127.0.0.1:8080/fhir',
      routes: [{ name: 'fhir-api-key-auth-route', paths: ['/fhir-api-key-auth'], plugins: [{ name: 'key-auth' }] }],
    },
    {
      name: 'fhir-api',
      url: 'http://127.0.0.1:8080/fhir',
      routes: [{ name: 'fhir-api-route', paths: ['/fhir-api'] }],
      plugins: [{ name: 'basic-auth' }, { name: 'cors', config: { origins: ['https://app.example'] } }],
    },
  ],
  consumers: [
    {
      username: 'hospital',
      keyauth_credentials: [{ key: 'k1-abcdefghijklmnopqrstuvwxyz' }],
      basicauth_credentials: [{ username: 'hospital', password: 'pw-1' }],
      acls: [{ group: 'readers' }],
    },
  ],
  plugins: [{ name: 'rate-limiting', service: 'fhir-api', config: { minute: 100 } }],
};

let admin: Admin;
beforeEach(async () => {
  admin = await startAdmin({ plugins: PLUGIN_SCHEMAS });
});
afterEach(async () => {
  await admin.close();
});
afterAll(() => removeTempDirs());

describe('POST /config (kong/api/routes/config.lua)', () => {
  it('replaces the whole configuration atomically and answers 201 with entities by id', async () => {
    await admin.call('POST', '/services', { name: 'old', host: 'h' });
    const r = await admin.call('POST', '/config', DOC);
    expect(r.status).toBe(201);
    expect(Object.keys(r.json.services)).toHaveLength(2);
    expect(Object.keys(r.json.routes)).toHaveLength(2);
    expect(Object.keys(r.json.plugins)).toHaveLength(4);
    expect((await admin.call('GET', '/services/old')).status).toBe(404);
    const route = await admin.call('GET', '/routes/fhir-api-key-auth-route/plugins');
    expect(route.json.data[0].config.key_names).toEqual(['apikey']);
    const cred = await admin.call('GET', '/consumers/hospital/basic-auth/hospital');
    expect(cred.json.password).not.toBe('pw-1');
    expect(verifyBasicAuthPassword('pw-1', cred.json.consumer.id, cred.json.password)).toBe(true);
    const rl = await admin.call('GET', '/services/fhir-api/plugins');
    expect(rl.json.data.map((p: { name: string }) => p.name).sort()).toEqual(['basic-auth', 'cors', 'rate-limiting']);
  });

  it('round-trips: export validates against decK schema and reloads to the same entities', async () => {
    await admin.call('POST', '/config', DOC);
    const before = admin.store.snapshot().config;
    const exported = exportDeclarative(before);
    expect(validateKongFile(exported), JSON.stringify(validateKongFile.errors)).toBe(true);
    expect(exported).toMatchObject({ _format_version: '3.0', _transform: false });
    const again = await admin.call('POST', '/config', exported);
    expect(again.status).toBe(201);
    const strip = (c: object): unknown => JSON.parse(JSON.stringify(c, (k, v) => (k === 'created_at' || k === 'updated_at' ? undefined : v)));
    expect(strip(admin.store.snapshot().config)).toEqual(strip(before));
    // The same password still verifies after the round trip (stored hash carried as-is).
    const cred = admin.store.snapshot().config.basicauth_credentials[0];
    expect(cred && verifyBasicAuthPassword('pw-1', cred.consumer.id, cred.password)).toBe(true);
    // The decK form (what `gateway export` writes): decK 1.4.0's schema and the current one accept it,
    // and it reloads to the same entities, the scrypt password hash kept as stored.
    const deckForm = exportDeclarative(before, 'deck');
    expect(validateDeck14File(deckForm), JSON.stringify(validateDeck14File.errors)).toBe(true);
    expect(validateKongFile(deckForm), JSON.stringify(validateKongFile.errors)).toBe(true);
    expect(validateDeck14File(exported)).toBe(false); // Kong's own form carries _transform and enabled
    expect(deckForm).not.toHaveProperty('_transform');
    const fromDeck = await admin.call('POST', '/config', deckForm);
    expect(fromDeck.status).toBe(201);
    expect(strip(admin.store.snapshot().config)).toEqual(strip(before));
    // GET /config serves the same document as YAML.
    const yaml = await admin.call('GET', '/config');
    expect(yaml.json.config).toContain("_format_version: \"3.0\"");
  });

  it('accepts {"config": "<yaml>"} and answers 304 with check_hash when unchanged', async () => {
    const body = { config: '_format_version: "3.0"\nconsumers:\n- username: yaml-user\n' };
    expect((await admin.call('POST', '/config?check_hash=1', body)).status).toBe(201);
    expect((await admin.call('POST', '/config?check_hash=1', body)).status).toBe(304);
    expect((await admin.call('GET', '/consumers/yaml-user')).status).toBe(200);
  });

  it('rejects an empty body and an invalid document, changing nothing', async () => {
    await admin.call('POST', '/services', { name: 'keep', host: 'h' });
    const version = admin.store.snapshot().version;
    const empty = await admin.call('POST', '/config', {});
    expect(empty).toMatchObject({ status: 400, json: { message: 'expected a declarative configuration' } });
    const bad = await admin.call('POST', '/config', {
      _format_version: '3.0',
      services: [{ name: 'ok', host: 'h' }, { name: 'broken' }],
      plugins: [{ name: 'nope' }],
    });
    expect(bad.status).toBe(400);
    expect(bad.json.code).toBe(14);
    expect(bad.json.name).toBe('invalid declarative configuration');
    expect(bad.json.message).toMatch(/^declarative config is invalid: \{/);
    expect(bad.json.message).toContain('services={[2]={host="required field missing"}}');
    expect(bad.json.fields.services).toEqual([null, { host: 'required field missing' }]);
    expect(bad.json.fields.plugins[0].name).toMatch(/not enabled/);
    const noVersion = await admin.call('POST', '/config', { services: [] });
    expect(noVersion.json.fields).toEqual({ _format_version: 'required field missing' });
    expect(admin.store.snapshot().version).toBe(version);
    expect((await admin.call('GET', '/services/keep')).status).toBe(200);
  });
});

describe('parseDeclarative (kong/db/schema/others/declarative_config.lua)', () => {
  it('with _transform: false takes Kong SHA-1 password hashes as stored, and they verify', () => {
    const consumerId = '0c8e1a3e-8a1f-4e1e-9a52-3a8f5b2d7c10';
    const sha1 = kongSha1Password('kong-pw', consumerId);
    const config = parseDeclarative({
      _format_version: '3.0',
      _transform: false,
      consumers: [{ id: consumerId, username: 'k', basicauth_credentials: [{ username: 'k', password: sha1 }] }],
    });
    const cred = config.basicauth_credentials[0];
    expect(cred?.password).toBe(sha1);
    expect(verifyBasicAuthPassword('kong-pw', consumerId, sha1)).toBe(true);
    expect(verifyBasicAuthPassword('other', consumerId, sha1)).toBe(false);
    expect(() =>
      parseDeclarative({ _format_version: '3.0', _transform: false, consumers: [{ username: 'k', basicauth_credentials: [{ username: 'k', password: 'plain' }] }] }),
    ).toThrow(/declarative config is invalid/);
  });

  it('without _transform: false hashes passwords, a Kong SHA-1 value too (kong/db/declarative/import.lua), but keeps our scrypt form', () => {
    const consumerId = '0c8e1a3e-8a1f-4e1e-9a52-3a8f5b2d7c10';
    const sha1 = kongSha1Password('kong-pw', consumerId);
    const scrypt = hashBasicAuthPassword('native-pw', consumerId);
    const config = parseDeclarative({
      _format_version: '3.0',
      consumers: [
        {
          id: consumerId,
          username: 'k',
          basicauth_credentials: [
            { username: 'sha', password: sha1 },
            { username: 'scr', password: scrypt },
            { username: 'plain', password: 'plain-pw' },
          ],
        },
      ],
    });
    const [sha, scr, plain] = config.basicauth_credentials;
    expect(sha?.password).not.toBe(sha1);
    expect(verifyBasicAuthPassword(sha1, consumerId, sha?.password as string)).toBe(true); // the hex was taken as a password
    expect(scr?.password).toBe(scrypt);
    expect(verifyBasicAuthPassword('native-pw', consumerId, scr?.password as string)).toBe(true);
    expect(verifyBasicAuthPassword('plain-pw', consumerId, plain?.password as string)).toBe(true);
    // What `gateway export` warns about: a Kong SHA-1 hash does not survive the decK form.
    const fromKong = parseDeclarative({ _format_version: '3.0', _transform: false, consumers: [{ id: consumerId, username: 'k', basicauth_credentials: [{ username: 'sha', password: sha1 }, { username: 'scr', password: scrypt }] }] });
    expect(kongHashedCredentials(fromKong)).toEqual(['k/sha']);
  });

  it('the decK form refuses a disabled service with a coded error; Kong\'s form keeps enabled: false', () => {
    const config = parseDeclarative({ _format_version: '3.0', services: [{ name: 'off', host: 'h', enabled: false }, { name: 'on', host: 'h' }] });
    expect(() => exportDeclarative(config, 'deck')).toThrow(expect.objectContaining({ code: 'ERR_GATEWAY_EXPORT_DISABLED_SERVICE', message: expect.stringContaining('off') }));
    expect(exportDeclarative(config, 'kong')).toMatchObject({ _transform: false, services: [{ name: 'off', enabled: false }, { name: 'on', enabled: true }] });
  });

  it('refers across top-level entities by name and rejects unsupported entity lists', () => {
    const config = parseDeclarative({
      _format_version: '3.0',
      services: [{ name: 's', host: 'h' }],
      routes: [{ name: 'r', paths: ['/r'], service: { name: 's' } }],
      plugins: [{ name: 'key-auth', route: 'r' }],
    });
    expect(config.routes[0]?.service?.id).toBe(config.services[0]?.id);
    expect(config.plugins[0]?.route?.id).toBe(config.routes[0]?.id);
    expect(() => parseDeclarative({ _format_version: '3.0', consumer_groups: [{ name: 'g' }] })).toThrow(/consumer_groups/);
    expect(() => parseDeclarative({ _format_version: '9.9' })).toThrow(/_format_version/);
  });

  it('reports a duplicate key as already declared without echoing the key', () => {
    const secret = 'duplicate-secret-key-0123456789';
    let body: Record<string, unknown> = {};
    try {
      parseDeclarative({
        _format_version: '3.0',
        consumers: [
          { username: 'a', keyauth_credentials: [{ key: secret }] },
          { username: 'b', keyauth_credentials: [{ key: secret }] },
        ],
      });
    } catch (err) {
      body = (err as KongError).body;
      expect((err as Error).message).not.toContain(secret);
    }
    expect(body.code).toBe(14);
    expect(JSON.stringify(body)).not.toContain(secret);
    expect(JSON.stringify(body.fields)).toContain('already declared');
  });
});

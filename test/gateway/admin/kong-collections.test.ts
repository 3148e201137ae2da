/**
 * Issue 14: every collection Kong 3.9 OSS serves answers with Kong's shapes,
 * paging and errors (Kong's kong/db/schema/entities/{certificates,snis,
 * upstreams,targets}.lua, kong/db/dao/{certificates,targets}.lua,
 * kong/api/routes/{certificates,upstreams,targets}.lua and the hmac-auth,
 * jwt and oauth2 daos.lua), persisted in the state file and carried by
 * POST /config and the export.
 */
import { readFileSync } from 'node:fs';
import AjvDraft04Module from 'ajv-draft-04';
import { generateCa, issueCertificate, type KeyAndCert } from '../../../src/tls/pki.js';
import { exportDeclarative } from '../../../src/gateway/declarative/export.js';
import { parseDeclarative } from '../../../src/gateway/declarative/parse.js';
import { loadSnapshotFromFile } from '../../../src/gateway/store/index.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { STAND_IN_PLUGINS, TOOLKIT_VERSION, useFreshAdmin } from './harness.js';

const admin = useFreshAdmin();
// decK's schema for declarative files (test/fixtures/schemas/README.md gives its source).
const AjvDraft04 = (AjvDraft04Module as unknown as { default?: typeof AjvDraft04Module.default }).default ?? AjvDraft04Module.default;
const validateDeckFile = new AjvDraft04({ allErrors: true, strict: false }).compile(
  JSON.parse(readFileSync(new URL('../../fixtures/schemas/kong-declarative-config.json', import.meta.url), 'utf8')),
);
let ca: KeyAndCert;
let leaf: KeyAndCert;
let other: KeyAndCert;

beforeAll(() => {
  ca = generateCa({ commonName: 'Collections Test CA' });
  leaf = issueCertificate(ca, { commonName: 'fhir.hospital.test', hosts: ['fhir.hospital.test'], usage: 'server' });
  other = issueCertificate(ca, { commonName: 'other.hospital.test', hosts: ['other.hospital.test'], usage: 'server' });
});

describe('GET / (issue 14)', () => {
  it("reports the Kong version whose admin API it speaks, and the toolkit's own version apart", async () => {
    const root = await admin.call('GET', '/');
    expect(root.json.version).toMatch(/^3\.9\.\d+$/);
    expect(root.json.hospital_api_version).toBe(TOOLKIT_VERSION);
  });
});

describe('certificates and SNIs', () => {
  it('creates a certificate with snis, lists the names sorted, finds it by SNI name, and nests /certificates/{c}/snis', async () => {
    const created = await admin.call('POST', '/certificates', { cert: leaf.certPem, key: leaf.keyPem, snis: ['z.hospital.test', 'fhir.hospital.test'], tags: ['t1'] });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ cert: leaf.certPem, key: leaf.keyPem, cert_alt: null, key_alt: null, tags: ['t1'], snis: ['fhir.hospital.test', 'z.hospital.test'] });
    expect(Number.isInteger(created.json.updated_at)).toBe(true);
    const id = created.json.id as string;
    expect((await admin.call('GET', '/certificates/fhir.hospital.test')).json.id).toBe(id);
    const snis = await admin.call('GET', `/certificates/${id}/snis`);
    expect(snis.json.data.map((s: { name: string }) => s.name).sort()).toEqual(['fhir.hospital.test', 'z.hospital.test']);
    expect(snis.json.data[0]).toMatchObject({ certificate: { id }, tags: null });
    const nested = await admin.call('POST', `/certificates/${id}/snis`, { name: '*.fhir.hospital.test' });
    expect(nested.status).toBe(201);
    expect(nested.json.certificate).toEqual({ id });
    expect((await admin.call('GET', `/snis/${encodeURIComponent('*.fhir.hospital.test')}`)).json.id).toBe(nested.json.id);
    expect((await admin.call('GET', `/certificates/${id}`)).json.snis).toEqual(['*.fhir.hospital.test', 'fhir.hospital.test', 'z.hospital.test']);
    const back = await admin.call('GET', '/snis/z.hospital.test/certificate');
    expect(back.json).toMatchObject({ id, snis: ['*.fhir.hospital.test', 'fhir.hospital.test', 'z.hospital.test'] });
    expect((await admin.call('GET', '/snis/nope.test/certificate')).status).toBe(404);
    // kong/api/routes/certificates.lua: an unknown name is "SNI not found"; PUT by name creates a certificate holding it.
    expect((await admin.call('GET', '/certificates/nope.test')).json).toEqual({ message: 'SNI not found' });
    const byName = await admin.call('PUT', '/certificates/new.hospital.test', { cert: other.certPem, key: other.keyPem, snis: ['b.hospital.test'] });
    expect(byName.status).toBe(200);
    expect(byName.json.snis).toEqual(['b.hospital.test', 'new.hospital.test']);
    expect(byName.json.id).not.toBe(id);
    expect((await admin.call('GET', '/certificates/new.hospital.test')).json.id).toBe(byName.json.id);
  });

  it("refuses a key that is not the certificate's, a duplicate or taken SNI, and bad SNI names, with Kong's errors", async () => {
    const mismatch = await admin.call('POST', '/certificates', { cert: leaf.certPem, key: other.keyPem });
    expect(mismatch.status).toBe(400);
    expect(mismatch.json).toMatchObject({ code: 2, name: 'schema violation', fields: { '@entity': ['certificate does not match key'] } });
    const missing = await admin.call('POST', '/certificates', { cert: leaf.certPem });
    expect(missing.json.fields).toEqual({ key: 'required field missing' });
    const a = await admin.call('POST', '/certificates', { cert: leaf.certPem, key: leaf.keyPem, snis: ['a.test'] });
    const dup = await admin.call('POST', '/certificates', { cert: other.certPem, key: other.keyPem, snis: ['b.test', 'b.test'] });
    expect(dup.json.fields).toEqual({ snis: 'b.test is duplicated' });
    const taken = await admin.call('POST', '/certificates', { cert: other.certPem, key: other.keyPem, snis: ['a.test'] });
    expect(taken.status).toBe(400);
    expect(taken.json.fields).toEqual({ snis: `a.test already associated with existing certificate '${a.json.id}'` });
    expect((await admin.call('POST', '/snis', { name: 'a.*.test', certificate: { id: a.json.id } })).json.fields).toEqual({
      name: 'wildcard must be leftmost or rightmost character',
    });
    expect((await admin.call('POST', '/snis', { name: '10.0.0.1', certificate: { id: a.json.id } })).json.fields).toEqual({ name: 'must not be an IP' });
    const unique = await admin.call('POST', '/snis', { name: 'a.test', certificate: { id: a.json.id } });
    expect(unique.status).toBe(409);
    expect(unique.json).toMatchObject({ code: 5, fields: { name: 'a.test' } });
    // Nothing half-written: the refused certificates left no SNIs behind.
    expect((await admin.call('GET', '/snis')).json.data.map((s: { name: string }) => s.name)).toEqual(['a.test']);
  });

  it('PUT without snis clears them, PATCH keeps them, DELETE takes the SNIs along; a certificate in use by a service is protected', async () => {
    const c = await admin.call('POST', '/certificates', { cert: leaf.certPem, key: leaf.keyPem, snis: ['a.test', 'b.test'] });
    const id = c.json.id as string;
    expect((await admin.call('PATCH', `/certificates/${id}`, { tags: ['x'] })).json.snis).toEqual(['a.test', 'b.test']);
    expect((await admin.call('PATCH', `/certificates/${id}`, { snis: ['c.test'] })).json.snis).toEqual(['c.test']);
    const put = await admin.call('PUT', `/certificates/${id}`, { cert: leaf.certPem, key: leaf.keyPem });
    expect(put.json.snis).toEqual([]);
    expect((await admin.call('GET', '/snis')).json.data).toEqual([]);
    await admin.call('PATCH', `/certificates/${id}`, { snis: ['d.test'] });
    const svc = await admin.call('POST', '/services', { name: 's', url: 'https://up.test', client_certificate: { id } });
    expect(svc.status).toBe(201);
    const refused = await admin.call('DELETE', `/certificates/${id}`);
    expect(refused.status).toBe(400);
    expect(refused.json).toMatchObject({ code: 4, message: "an existing 'services' entity references this 'certificates' entity" });
    await admin.call('DELETE', '/services/s');
    expect((await admin.call('DELETE', `/certificates/${id}`)).status).toBe(204);
    expect((await admin.call('GET', '/snis')).json).toEqual({ data: [], next: null });
    expect((await admin.call('GET', '/certificates/d.test')).status).toBe(404);
  });
});

describe('upstreams and targets', () => {
  it("fills Kong's defaults, including the healthchecks record, and merges a PATCH into it", async () => {
    const u = await admin.call('POST', '/upstreams', { name: 'fhir-pool' });
    expect(u.status).toBe(201);
    expect(u.json).toMatchObject({
      name: 'fhir-pool',
      algorithm: 'round-robin',
      hash_on: 'none',
      hash_fallback: 'none',
      hash_on_cookie_path: '/',
      slots: 10000,
      use_srv_name: false,
      host_header: null,
      client_certificate: null,
      tags: null,
    });
    expect(u.json.healthchecks.passive.unhealthy).toEqual({ http_statuses: [429, 500, 503], tcp_failures: 0, timeouts: 0, http_failures: 0 });
    expect(u.json.healthchecks.active).toMatchObject({ type: 'http', timeout: 1, concurrency: 10, http_path: '/', https_sni: null, headers: null });
    expect(u.json.healthchecks.threshold).toBe(0);
    const patched = await admin.call('PATCH', '/upstreams/fhir-pool', { healthchecks: { passive: { unhealthy: { tcp_failures: 2 } } } });
    expect(patched.json.healthchecks.passive.unhealthy).toEqual({ http_statuses: [429, 500, 503], tcp_failures: 2, timeouts: 0, http_failures: 0 });
    expect(patched.json.healthchecks.active.healthy.http_statuses).toEqual([200, 302]);
    const bad = await admin.call('PATCH', '/upstreams/fhir-pool', { healthchecks: { passive: { unhealthy: { tcp_failures: 300, nope: 1 } } } });
    expect(bad.status).toBe(400);
    expect(bad.json.fields).toEqual({ healthchecks: { passive: { unhealthy: { tcp_failures: 'value should be between 0 and 255', nope: 'unknown field' } } } });
    expect((await admin.call('POST', '/upstreams', { name: '10.0.0.1' })).json.fields).toEqual({ name: "Invalid name ('10.0.0.1'); no ip addresses allowed" });
    expect((await admin.call('POST', '/upstreams', { name: 'up.test:80' })).json.fields).toEqual({ name: "Invalid name ('up.test:80'); no port allowed" });
    expect((await admin.call('POST', '/upstreams', { name: 'x', hash_on: 'header' })).json.fields).toEqual({ hash_on_header: 'required field missing' });
    const hashed = await admin.call('POST', '/upstreams', { name: 'h', hash_on: 'ip' });
    expect(hashed.json.algorithm).toBe('consistent-hashing');
  });

  it('keeps targets under their upstream: port 8000 by default, millisecond timestamps, one per address, /targets disabled', async () => {
    const u = await admin.call('POST', '/upstreams', { name: 'pool' });
    const t1 = await admin.call('POST', '/upstreams/pool/targets', { target: '10.0.0.1' });
    expect(t1.status).toBe(201);
    expect(t1.json).toMatchObject({ target: '10.0.0.1:8000', weight: 100, upstream: { id: u.json.id }, tags: null });
    expect(typeof t1.json.created_at).toBe('number');
    const t2 = await admin.call('POST', `/upstreams/${u.json.id}/targets`, 'target=fhir-2.hospital.test:8080&weight=50');
    expect(t2.json).toMatchObject({ target: 'fhir-2.hospital.test:8080', weight: 50 });
    const v6 = await admin.call('POST', '/upstreams/pool/targets', { target: '[::1]:9000' });
    expect(v6.json.target).toBe('[0000:0000:0000:0000:0000:0000:0000:0001]:9000');
    expect((await admin.call('POST', '/upstreams/pool/targets', { target: '10.0.0.1:8000' })).status).toBe(409);
    expect((await admin.call('POST', '/upstreams/pool/targets', { target: 'bad host' })).json.fields).toEqual({
      target: "Invalid target ('bad host'); not a valid hostname or ip address",
    });
    expect((await admin.call('POST', '/upstreams/pool/targets', { target: 'x.test', weight: 70000 })).json.fields).toEqual({ weight: 'value should be between 0 and 65535' });
    expect((await admin.call('GET', `/upstreams/pool/targets/${encodeURIComponent('10.0.0.1:8000')}`)).json.id).toBe(t1.json.id);
    expect((await admin.call('PATCH', `/upstreams/pool/targets/${t1.json.id}`, { weight: 0 })).json.weight).toBe(0);
    // Paging as Kong pages: size, opaque offset, next carrying both.
    const page1 = await admin.call('GET', '/upstreams/pool/targets?size=2');
    expect(page1.json.data).toHaveLength(2);
    expect(page1.json.next).toBe(`/upstreams/pool/targets?offset=${encodeURIComponent(page1.json.offset)}&size=2`);
    const page2 = await admin.call('GET', page1.json.next);
    expect(page2.json).toMatchObject({ next: null });
    expect(page2.json.data).toHaveLength(1);
    expect((await admin.call('GET', '/upstreams/pool/targets/all')).json.data).toHaveLength(3);
    expect((await admin.call('GET', '/upstreams/pool/targets?size=0')).json).toMatchObject({ code: 9, message: 'size must be an integer between 1 and 1000' });
    expect((await admin.call('GET', '/targets')).json).toEqual({ message: 'Method not allowed' });
    expect((await admin.call('GET', '/upstreams/nope/targets')).status).toBe(404);
    expect((await admin.call('DELETE', '/upstreams/pool')).status).toBe(204);
    expect((await admin.call('GET', '/upstreams/pool/targets')).status).toBe(404);
    expect(admin.store.snapshot().config.targets).toEqual([]);
  });
});

describe("credentials of Kong's bundled auth plugins", () => {
  it('hmac-auth, jwt and oauth2: generated secrets, nested and global lists, lookup by endpoint key, Kong errors', async () => {
    const c = await admin.call('POST', '/consumers', { username: 'platform' });
    const hmac = await admin.call('POST', '/consumers/platform/hmac-auth', { username: 'platform-hmac' });
    expect(hmac.status).toBe(201);
    expect(hmac.json).toMatchObject({ consumer: { id: c.json.id }, username: 'platform-hmac', tags: null });
    expect(hmac.json.secret).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await admin.call('GET', '/hmac-auths/platform-hmac')).json.id).toBe(hmac.json.id);
    expect((await admin.call('POST', '/consumers/platform/hmac-auth', { username: 'platform-hmac' })).status).toBe(409);
    const jwt = await admin.call('POST', '/consumers/platform/jwt', {});
    expect(jwt.json).toMatchObject({ algorithm: 'HS256', rsa_public_key: null });
    expect(jwt.json.key).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(jwt.json.secret).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await admin.call('GET', `/consumers/platform/jwt/${jwt.json.key}`)).json.id).toBe(jwt.json.id);
    expect((await admin.call('POST', '/consumers/platform/jwt', { algorithm: 'RS256' })).json.fields).toEqual({ rsa_public_key: 'required field missing' });
    expect((await admin.call('POST', '/consumers/platform/jwt', { algorithm: 'RS256', rsa_public_key: 'nope' })).json.fields).toEqual({ rsa_public_key: 'invalid key' });
    const oauth = await admin.call('POST', '/consumers/platform/oauth2', { name: 'app', redirect_uris: ['https://app.test/cb'] });
    expect(oauth.json).toMatchObject({ name: 'app', hash_secret: false, client_type: 'confidential', redirect_uris: ['https://app.test/cb'] });
    expect(oauth.json.client_id).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await admin.call('GET', `/oauth2/${oauth.json.client_id}`)).json.id).toBe(oauth.json.id);
    expect((await admin.call('POST', '/consumers/platform/oauth2', { name: 'x', redirect_uris: ['https://a.test/#f'] })).json.fields).toEqual({
      redirect_uris: "fragment not allowed in 'https://a.test/#f'",
    });
    for (const path of ['/hmac-auths', '/jwts', '/oauth2', '/consumers/platform/hmac-auth', '/consumers/platform/jwt', '/consumers/platform/oauth2']) {
      const list = await admin.call('GET', `${path}?size=1000`);
      expect(list.status, path).toBe(200);
      expect(list.json.data, path).toHaveLength(1);
      expect(list.json.next, path).toBeNull();
    }
    expect((await admin.call('POST', '/consumers/nobody/hmac-auth', { username: 'u' })).json).toEqual({ message: 'Not found' });
    // Back references Kong generates for each foreign key.
    for (const path of ['/hmac-auths/platform-hmac/consumer', `/jwts/${jwt.json.key}/consumer`, `/oauth2/${oauth.json.client_id}/consumer`]) {
      expect((await admin.call('GET', path)).json, path).toEqual(c.json);
    }
    expect((await admin.call('DELETE', '/consumers/platform')).status).toBe(204);
    const config = admin.store.snapshot().config;
    expect([config.hmacauth_credentials, config.jwt_secrets, config.oauth2_credentials]).toEqual([[], [], []]);
  });
});

describe('persistence, POST /config and export', () => {
  it('keeps every new collection in the state file and round-trips it through export and POST /config', async () => {
    const cert = await admin.call('POST', '/certificates', { cert: leaf.certPem, key: leaf.keyPem, snis: ['fhir.hospital.test'] });
    await admin.call('POST', '/upstreams', { name: 'fhir-pool' });
    await admin.call('POST', '/upstreams/fhir-pool/targets', { target: '127.0.0.1:8081', weight: 30 });
    await admin.call('POST', '/consumers', { username: 'platform' });
    await admin.call('POST', '/consumers/platform/hmac-auth', { username: 'h', secret: 'hmac-secret-1' });
    await admin.call('POST', '/consumers/platform/jwt', { key: 'iss-1', secret: 'jwt-secret-1' });
    await admin.call('POST', '/consumers/platform/oauth2', { name: 'app', client_id: 'cid', client_secret: 'csecret' });
    const onDisk = loadSnapshotFromFile(admin.store.statePath).config;
    expect(onDisk.certificates.map((c) => c.id)).toEqual([cert.json.id]);
    expect(onDisk.snis.map((s) => s.name)).toEqual(['fhir.hospital.test']);
    expect(onDisk.targets.map((t) => t.target)).toEqual(['127.0.0.1:8081']);
    expect(onDisk.hmacauth_credentials.map((c) => c.secret)).toEqual(['hmac-secret-1']);
    const doc = exportDeclarative(onDisk);
    expect(validateDeckFile(doc), JSON.stringify(validateDeckFile.errors)).toBe(true);
    expect(doc.certificates).toEqual([expect.objectContaining({ id: cert.json.id, snis: [expect.objectContaining({ name: 'fhir.hospital.test' })] })]);
    expect(doc.upstreams).toEqual([expect.objectContaining({ name: 'fhir-pool', targets: [expect.objectContaining({ target: '127.0.0.1:8081', weight: 30 })] })]);
    const reparsed = parseDeclarative(doc, STAND_IN_PLUGINS);
    for (const name of ['certificates', 'snis', 'upstreams', 'targets', 'hmacauth_credentials', 'jwt_secrets', 'oauth2_credentials'] as const) {
      expect(reparsed[name].map((e) => e.id), name).toEqual(onDisk[name].map((e) => e.id));
    }
    // POST /config replaces everything with the document, new collections included.
    const replaced = await admin.call('POST', '/config', {
      _format_version: '3.0',
      certificates: [{ cert: other.certPem, key: other.keyPem, snis: [{ name: 'other.hospital.test' }] }],
      upstreams: [{ name: 'pool-b', targets: [{ target: 'fhir-b.test' }] }],
      consumers: [{ username: 'c', hmacauth_credentials: [{ username: 'hb' }], jwt_secrets: [{ key: 'k' }], oauth2_credentials: [{ name: 'o' }] }],
    });
    expect(replaced.status).toBe(201);
    const now = admin.store.snapshot().config;
    expect(now.snis.map((s) => s.name)).toEqual(['other.hospital.test']);
    expect(now.targets.map((t) => t.target)).toEqual(['fhir-b.test:8000']);
    expect([now.hmacauth_credentials.length, now.jwt_secrets.length, now.oauth2_credentials.length]).toEqual([1, 1, 1]);
    const invalid = await admin.call('POST', '/config', { _format_version: '3.0', upstreams: [{ name: 'u', targets: [{ target: 'bad host' }] }] });
    expect(invalid.status).toBe(400);
    expect(invalid.json.code).toBe(14);
    expect(admin.store.snapshot().config.snis.map((s) => s.name)).toEqual(['other.hospital.test']);
  });
});

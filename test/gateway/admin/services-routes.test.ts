import { describe, expect, it } from 'vitest';
import { useFreshAdmin } from './harness.js';

const admin = useFreshAdmin();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('services (kong/db/schema/entities/services.lua)', () => {
  it('fills Kong defaults and expands the url shorthand, which is never returned', async () => {
    const r = await admin.call('POST', '/services', { name: 'fhir', url: 'http://up:8080/fhir' });
    expect(r.status).toBe(201);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(r.json).toMatchObject({
      name: 'fhir', protocol: 'http', host: 'up', port: 8080, path: '/fhir', retries: 5,
      connect_timeout: 60000, write_timeout: 60000, read_timeout: 60000, enabled: true,
      tags: null, client_certificate: null, tls_verify: null, tls_verify_depth: null, ca_certificates: null,
    });
    expect(r.json.id).toMatch(UUID);
    expect(Number.isInteger(r.json.created_at)).toBe(true);
    expect(r.json).not.toHaveProperty('url');
    const https = await admin.call('POST', '/services', { name: 's2', url: 'https://secure.example' });
    expect(https.json).toMatchObject({ protocol: 'https', port: 443, path: null });
    const plain = await admin.call('POST', '/services', { name: 's3', url: 'http://plain' });
    expect(plain.json.port).toBe(80);
  });

  it('reports schema violations with code 2, fields and Kong message', async () => {
    const r = await admin.call('POST', '/services', { name: 'x' });
    expect(r.status).toBe(400);
    expect(r.json).toEqual({
      code: 2,
      name: 'schema violation',
      message: 'schema violation (host: required field missing)',
      fields: { host: 'required field missing' },
    });
    const two = await admin.call('POST', '/services', { port: 'eighty', bogus: 1 });
    expect(two.json.message).toBe('3 schema violations (bogus: unknown field; host: required field missing; port: expected an integer)');
    expect(two.json.fields).toEqual({ bogus: 'unknown field', host: 'required field missing', port: 'expected an integer' });
    const tls = await admin.call('POST', '/services', { host: 'h', tls_verify: true });
    expect(tls.json.fields.tls_verify).toBe('value must be null');
  });

  it('rejects a duplicate name with 409 code 5 and a duplicate id with 409', async () => {
    const first = await admin.call('POST', '/services', { name: 'fhir', host: 'a' });
    const dup = await admin.call('POST', '/services', { name: 'fhir', host: 'b' });
    expect(dup.status).toBe(409);
    expect(dup.json).toEqual({
      code: 5,
      name: 'unique constraint violation',
      message: `UNIQUE violation detected on '{name="fhir"}'`,
      fields: { name: 'fhir' },
    });
    const dupId = await admin.call('POST', '/services', { id: first.json.id, host: 'c' });
    expect(dupId.status).toBe(409);
    expect(dupId.json.fields).toEqual({ id: `already exists with value '${first.json.id}'` });
  });

  it('looks a UUID-shaped segment up only by id, anything else by name', async () => {
    const uuidName = '11111111-2222-4333-8444-555555555555';
    const a = await admin.call('POST', '/services', { name: 'by-name', host: 'a' });
    expect((await admin.call('GET', '/services/by-name')).json.id).toBe(a.json.id);
    expect((await admin.call('GET', `/services/${a.json.id}`)).json.name).toBe('by-name');
    // A name must be a valid name; a UUID-shaped id given as the path of a PUT becomes the id.
    const put = await admin.call('PUT', `/services/${uuidName}`, { host: 'b' });
    expect(put.json.id).toBe(uuidName);
    expect(put.json.name).toBeNull();
    expect((await admin.call('GET', '/services/nope')).status).toBe(404);
    expect((await admin.call('GET', '/services/nope')).json).toEqual({ message: 'Not found' });
    // A name that looks like a UUID cannot be found by name (Kong's kong/api/endpoints.lua; Kong #2338).
    const sneaky = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
    const c = await admin.call('POST', '/consumers', { username: sneaky });
    expect(c.status).toBe(201);
    expect((await admin.call('GET', `/consumers/${sneaky}`)).status).toBe(404);
    expect((await admin.call('GET', `/consumers/${c.json.id}`)).json.username).toBe(sneaky);
  });

  it('PUT upserts by name, idempotently, keeping id and created_at', async () => {
    const one = await admin.call('PUT', '/services/fhir', { url: 'http://up:8080/fhir' });
    expect(one.status).toBe(200);
    const two = await admin.call('PUT', '/services/fhir', { url: 'http://up:8080/fhir' });
    expect(two.status).toBe(200);
    expect(two.json.id).toBe(one.json.id);
    expect(two.json.created_at).toBe(one.json.created_at);
    expect({ ...two.json, updated_at: 0 }).toEqual({ ...one.json, updated_at: 0 });
    const list = await admin.call('GET', '/services');
    expect(list.json.data).toHaveLength(1);
    // PUT replaces: fields not sent go back to their defaults.
    await admin.call('PATCH', '/services/fhir', { retries: 9 });
    const replaced = await admin.call('PUT', '/services/fhir', { host: 'other' });
    expect(replaced.json).toMatchObject({ retries: 5, host: 'other', port: 80, path: null });
  });

  it('PATCH merges, and a url PATCH resets protocol/host/port/path together', async () => {
    await admin.call('POST', '/services', { name: 's', url: 'https://a:9443/x' });
    const p = await admin.call('PATCH', '/services/s', { read_timeout: 5 });
    expect(p.json).toMatchObject({ protocol: 'https', host: 'a', port: 9443, path: '/x', read_timeout: 5 });
    const u = await admin.call('PATCH', '/services/s', { url: 'http://b' });
    expect(u.json).toMatchObject({ protocol: 'http', host: 'b', port: 80, path: null, read_timeout: 5 });
    expect((await admin.call('PATCH', '/services/none', { retries: 1 })).status).toBe(404);
  });

  it('DELETE answers 204 with an empty body, even for an entity that does not exist', async () => {
    await admin.call('POST', '/services', { name: 's', host: 'h' });
    const d = await admin.call('DELETE', '/services/s');
    expect(d.status).toBe(204);
    expect(d.text).toBe('');
    expect((await admin.call('GET', '/services/s')).status).toBe(404);
    expect((await admin.call('DELETE', '/services/s')).status).toBe(204);
  });

  it('paginates with size, offset and next, and validates size', async () => {
    for (let i = 0; i < 5; i++) await admin.call('POST', '/services', { name: `s${i}`, host: 'h', tags: i % 2 ? ['odd'] : ['even'] });
    const p1 = await admin.call('GET', '/services?size=2');
    expect(p1.json.data.map((s: { name: string }) => s.name)).toEqual(['s0', 's1']);
    expect(typeof p1.json.offset).toBe('string');
    expect(p1.json.next).toBe(`/services?offset=${encodeURIComponent(p1.json.offset)}&size=2`);
    const p2 = await admin.call('GET', p1.json.next);
    expect(p2.json.data.map((s: { name: string }) => s.name)).toEqual(['s2', 's3']);
    const p3 = await admin.call('GET', p2.json.next);
    expect(p3.json).toEqual({ data: [expect.objectContaining({ name: 's4' })], next: null });
    expect(p3.json).not.toHaveProperty('total');
    const all = await admin.call('GET', '/services');
    expect(all.json.data).toHaveLength(5);
    expect(all.json.next).toBeNull();
    for (const bad of ['0', '1001', 'x']) {
      const r = await admin.call('GET', `/services?size=${bad}`);
      expect(r.status).toBe(400);
      expect(r.json.message).toBe('size must be an integer between 1 and 1000');
    }
    const badOffset = await admin.call('GET', '/services?offset=not-an-offset');
    expect(badOffset.status).toBe(400);
    expect(badOffset.json).toMatchObject({ code: 7, name: 'invalid offset' });
    expect((await admin.call('GET', '/services?tags=odd')).json.data).toHaveLength(2);
    expect((await admin.call('GET', '/services?tags=odd,even')).json.data).toHaveLength(0);
    expect((await admin.call('GET', '/services?tags=odd/even')).json.data).toHaveLength(5);
  });
});

describe('routes (kong/db/schema/entities/routes.lua)', () => {
  it('fills route defaults and returns service as {id}', async () => {
    const svc = await admin.call('POST', '/services', { name: 'fhir', host: 'up' });
    const r = await admin.call('POST', '/routes', { name: 'r1', paths: ['/fhir'], service: { name: 'fhir' } });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({
      protocols: ['http', 'https'], methods: null, hosts: null, headers: null, snis: null, sources: null, destinations: null,
      https_redirect_status_code: 426, regex_priority: 0, strip_path: true, path_handling: 'v0', preserve_host: false,
      request_buffering: true, response_buffering: true, tags: null, service: { id: svc.json.id }, paths: ['/fhir'],
    });
  });

  it('validates paths and requires a matcher for http(s) routes', async () => {
    const bad = await admin.call('POST', '/routes', { paths: ['fhir'] });
    expect(bad.json.fields.paths).toBe('should start with: / (fixed path) or ~/ (regex path)');
    expect((await admin.call('POST', '/routes', { paths: ['/a//b'] })).status).toBe(400);
    const none = await admin.call('POST', '/routes', {});
    expect(none.json.fields).toEqual({
      '@entity': ["must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https'"],
    });
    expect(none.json.message).toBe(
      "schema violation (must set one of 'methods', 'hosts', 'headers', 'paths', 'snis' when 'protocols' is 'https')",
    );
  });

  it('resolves foreign keys: unknown id → code 4, unknown name → code 13', async () => {
    const id = '6f1b3c1e-0d7a-4c55-9d8e-2a6f0b7c9d11';
    const byId = await admin.call('POST', '/routes', { paths: ['/a'], service: { id } });
    expect(byId.status).toBe(400);
    expect(byId.json).toEqual({
      code: 4,
      name: 'foreign key violation',
      message: `the foreign key '{id="${id}"}' does not reference an existing 'services' entity.`,
      fields: { service: { id } },
    });
    const byName = await admin.call('POST', '/routes', { paths: ['/a'], service: { name: 'ghost' } });
    expect(byName.status).toBe(400);
    expect(byName.json.code).toBe(13);
    expect(byName.json.name).toBe('foreign keys unresolved');
  });

  it('nests under services: POST fills the service, a route of another service is 404, a service with routes cannot be deleted', async () => {
    const a = await admin.call('POST', '/services', { name: 'a', host: 'h' });
    await admin.call('POST', '/services', { name: 'b', host: 'h' });
    const r = await admin.call('POST', '/services/a/routes', { name: 'ra', paths: ['/a'] });
    expect(r.json.service).toEqual({ id: a.json.id });
    expect((await admin.call('GET', '/services/a/routes/ra')).status).toBe(200);
    expect((await admin.call('GET', '/services/b/routes/ra')).status).toBe(404);
    expect((await admin.call('GET', '/services/ghost/routes')).status).toBe(404);
    expect((await admin.call('GET', '/services/b/routes')).json).toEqual({ data: [], next: null });
    expect((await admin.call('GET', '/routes/ra/service')).json.id).toBe(a.json.id);
    expect((await admin.call('PATCH', '/routes/ra/service', { retries: 2 })).json).toMatchObject({ id: a.json.id, retries: 2 });
    const del = await admin.call('DELETE', '/services/a');
    expect(del.status).toBe(400);
    expect(del.json).toEqual({
      code: 4,
      name: 'foreign key violation',
      message: "an existing 'routes' entity references this 'services' entity",
      fields: { '@referenced_by': 'routes' },
    });
    expect((await admin.call('DELETE', '/routes/ra')).status).toBe(204);
    expect((await admin.call('DELETE', '/services/a')).status).toBe(204);
  });

  it('accepts form-urlencoded bodies with arrays, dotted keys and coercion', async () => {
    const svc = await admin.call('POST', '/services', 'name=fhir&host=up&port=8080');
    expect(svc.json.port).toBe(8080);
    const r = await admin.call('POST', '/routes', `name=r&paths[]=/a&paths[]=/b&strip_path=false&methods=get&service.id=${svc.json.id}`);
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ paths: ['/a', '/b'], strip_path: false, methods: ['GET'], service: { id: svc.json.id } });
  });
});

describe('general (kong/api/api_helpers.lua, kong/api/endpoints.lua)', () => {
  it('answers 404, 405, 415 and bad JSON like Kong', async () => {
    expect(await admin.call('GET', '/nothing-here')).toMatchObject({ status: 404, json: { message: 'Not found' } });
    expect(await admin.call('DELETE', '/services')).toMatchObject({ status: 405, json: { message: 'Method not allowed' } });
    expect((await admin.call('POST', '/services', '<xml/>', 'application/xml')).status).toBe(415);
    expect(await admin.call('POST', '/services', '{"host":', 'application/json')).toMatchObject({
      status: 400,
      json: { message: 'Cannot parse JSON body' },
    });
  });
});

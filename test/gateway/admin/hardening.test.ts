/**
 * Issue 12, admin side: linear-time validators, bodies through parsers that
 * refuse __proto__/constructor/prototype, names and keys limited, charsets
 * other than UTF-8 refused; issue 14: regex paths the router cannot run are
 * refused at write time with Kong's 400.
 */
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { applyServiceUrl } from '../../../src/gateway/model/entities.js';
import { checkHost, checkRouteHost, checkWildcardHost, normalizeIp } from '../../../src/gateway/model/hostname.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';
import { startGatewayChild } from './child.js';
import { useFreshAdmin } from './harness.js';

const admin = useFreshAdmin();
afterAll(() => removeTempDirs());

/** Inputs that make a backtracking host/URL pattern explode: long runs of label characters with a bad tail. */
function pathological(n: number): string[] {
  const run = 'a'.repeat(n);
  return [
    `${run}!`,
    `${'a.'.repeat(n)}!`,
    `${'a-'.repeat(n)}`,
    `${'a_'.repeat(n)}!`,
    `${'1.'.repeat(n)}1:`,
    `[${'0:'.repeat(n)}`,
    `${'::'.repeat(n)}x`,
    `${run}:${'9'.repeat(n)}`,
    `*.${run}*`,
  ];
}

describe('validators are linear (issue 12)', () => {
  it('answers every pathological host, SNI, target and URL correctly, however long', () => {
    // The old host regex took 4.6 s at 28 characters and doubled with each one more; these are 50,000.
    for (const bad of pathological(25_000)) {
      expect(checkHost(bad), bad.slice(0, 20)).not.toBeNull();
      expect(checkRouteHost(bad), bad.slice(0, 20)).not.toBeNull();
      expect(checkWildcardHost(bad), bad.slice(0, 20)).not.toBeNull();
      expect(normalizeIp(bad).ok, bad.slice(0, 20)).toBe(false);
      const errors: Record<string, string | string[]> = {};
      applyServiceUrl(`http://${bad}/p#x`, {}, errors);
      expect(errors.url, bad.slice(0, 20)).toBeDefined();
    }
    expect(checkHost('fhir.hospital.test')).toBeNull();
    expect(checkHost('fhir_1.hospital.test.')).toBeNull();
    expect(checkHost('10.0.0.1')).toBeNull();
    expect(checkHost('::1')).toBeNull();
    expect(checkHost('up.test:80')).toBe('must not have a port');
    expect(checkHost('-a.test')).toBeNull(); // Kong allows a leading dash (punycode)
    expect(checkHost('a-.test')).toBe('invalid value: a-.test');
    expect(checkHost('a..test')).toBe('invalid value: a..test');
    expect(checkHost(`${'a'.repeat(64)}.test`)).toBe(`invalid value: ${'a'.repeat(64)}.test`);
    expect(checkRouteHost('*.hospital.test')).toBeNull();
    expect(checkWildcardHost('*.hospital.test')).toBeNull();
    expect(checkWildcardHost('a.*.test')).toBe('wildcard must be leftmost or rightmost character');
  });

  it('answers at once through the admin API for pathological values in every checked field, up to each field\'s length cap', async () => {
    await admin.call('POST', '/services', { name: 's', url: 'http://up.test' });
    await admin.call('POST', '/upstreams', { name: 'pool' });
    await admin.call('POST', '/consumers', { username: 'c' });
    const cases: [string, (v: string) => Record<string, unknown>][] = [
      ['/services', (v) => ({ host: v })],
      ['/services', (v) => ({ url: `http://${v}/p` })],
      ['/services', (v) => ({ name: v, host: 'h.test' })],
      ['/services/s/routes', (v) => ({ hosts: [v] })],
      ['/services/s/routes', (v) => ({ paths: [`/${v}//`] })],
      ['/services/s/routes', (v) => ({ paths: ['/a'], snis: [v] })],
      ['/upstreams', (v) => ({ name: v })],
      ['/upstreams', (v) => ({ name: 'u2', host_header: v })],
      ['/upstreams/pool/targets', (v) => ({ target: v })],
      ['/consumers/c/key-auth', (v) => ({ key: `${v}\n` })],
      ['/consumers', (v) => ({ username: 'd', tags: [`${v},`] })],
    ];
    for (const bad of pathological(120)) {
      // A trailing '!' makes every value invalid for its field, so each answer must be a 400.
      const value = `${bad.slice(0, 249)}!`;
      for (const [path, body] of cases) {
        const res = await admin.call('POST', path, body(value));
        expect(res.status, `${path} ${JSON.stringify(body(bad.slice(0, 30)))}`).toBe(400);
      }
    }
  });

  it('keeps the admin API and the proxy answering while a pathological host arrives (real gateway process)', { timeout: 60_000 }, async () => {
    const gw = await startGatewayChild(join(tempDir('gw-linear-'), 'state.json'));
    try {
      // A hang detector, not a timing target: the answer takes milliseconds; the old regex would take hours on 41 characters.
      const signal = AbortSignal.timeout(20_000);
      const [put, proxied] = await Promise.all([
        request(`${gw.admin}/services/x`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ host: `${'a'.repeat(40)}!` }),
          signal,
        }),
        request(`${gw.proxy}/nothing-here`, { signal }),
      ]);
      expect(put.statusCode).toBe(400);
      expect(await put.body.json()).toMatchObject({ code: 2, fields: { host: `invalid value: ${'a'.repeat(40)}!` } });
      expect(proxied.statusCode).toBe(404);
      await proxied.body.dump();
    } finally {
      await gw.kill();
    }
  });
});

describe('bodies (issue 12)', () => {
  it('refuses __proto__, constructor and prototype keys in every body type, and later requests still work', async () => {
    const form = await admin.call('POST', '/consumers', '__proto__.prepare=1&username=x');
    expect(form.status).toBe(400);
    expect(form.json.message).toMatch(/__proto__, constructor and prototype are not allowed/);
    expect((await admin.call('POST', '/consumers', 'username=y&constructor.prototype.prepare=1')).status).toBe(400);
    expect((await admin.call('POST', '/consumers', 'username=y&tags[prototype]=1')).status).toBe(400);
    expect((await admin.call('POST', '/consumers', '{"username":"z","__proto__":{"prepare":1}}', 'application/json')).status).toBe(400);
    expect((await admin.call('POST', '/consumers', '{"username":"z","constructor":{"prototype":{"prepare":1}}}', 'application/json')).status).toBe(400);
    const boundary = 'XbX';
    const multipart = [`--${boundary}`, 'content-disposition: form-data; name="__proto__[prepare]"', '', '1', `--${boundary}--`, ''].join('\r\n');
    expect((await admin.call('POST', '/consumers', multipart, `multipart/form-data; boundary=${boundary}`)).status).toBe(400);
    const yaml = await admin.call('POST', '/config', { config: '_format_version: "3.0"\nconsumers:\n- username: a\n  __proto__: {prepare: 1}\n' });
    expect(yaml.status).toBe(400);
    expect(({} as Record<string, unknown>).prepare).toBeUndefined();
    // The poisoned form body of issue 12 made every later POST /consumers a 500 until restart.
    const after = await admin.call('POST', '/consumers', 'username=after&tags=t1');
    expect(after.status).toBe(201);
    expect(after.json).toMatchObject({ username: 'after', tags: ['t1'] });
    expect((await admin.call('POST', '/consumers', { username: 'after-json' })).status).toBe(201);
    expect(admin.store.snapshot().config.consumers.map((c) => c.username)).toEqual(['after', 'after-json']);
  });

  it('keeps Kong form conventions: dotted keys, [] and 1-based [n] arrays, repeated keys', async () => {
    await admin.call('POST', '/services', { name: 's', url: 'http://up.test' });
    const r = await admin.call('POST', '/services/s/routes', 'name=r&paths[]=/a&paths[]=/b&hosts=x.test&hosts=y.test&methods[1]=GET&methods[2]=POST');
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({ paths: ['/a', '/b'], hosts: ['x.test', 'y.test'], methods: ['GET', 'POST'] });
    const p = await admin.call('POST', '/plugins', 'name=rate-limiting&config.minute=5&service.name=s');
    expect(p.status).toBe(201);
    expect(p.json.config.minute).toBe(5);
  });

  it('refuses charsets other than UTF-8 (415) and bytes that are not UTF-8 (400) instead of misreading them', async () => {
    const latin1 = await admin.call('POST', '/consumers', '{"username":"caf\u00e9"}', 'application/json; charset=iso-8859-1');
    expect(latin1.status).toBe(415);
    expect(latin1.json.message).toBe("Unsupported charset 'iso-8859-1': send the body as UTF-8");
    expect((await admin.call('POST', '/consumers', 'username=x', 'application/x-www-form-urlencoded; charset=windows-1252')).status).toBe(415);
    expect((await admin.call('POST', '/consumers', 'username=caf%E9')).json).toEqual({ message: 'Form body is not valid UTF-8 percent-encoding' });
    const raw = await request(`${admin.url}/consumers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.concat([Buffer.from('{"username":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]),
    });
    expect(raw.statusCode).toBe(400);
    expect(await raw.body.json()).toEqual({ message: 'Request body is not valid UTF-8' });
    const ok = await admin.call('POST', '/consumers', 'username=caf%C3%A9', 'application/x-www-form-urlencoded; charset=UTF-8');
    expect(ok.status).toBe(201);
    expect(ok.json.username).toBe('café');
    expect(admin.store.snapshot().config.consumers.map((c) => c.username)).toEqual(['café']);
  });
});

describe('names and keys (issue 12)', () => {
  it("refuses a 100,000-character name with Kong's len_max message, and set elements likewise", async () => {
    const long = 'a'.repeat(100_000);
    for (const [path, body, field] of [
      ['/consumers', { username: long }, 'username'],
      ['/consumers', { custom_id: long }, 'custom_id'],
      ['/services', { name: long, host: 'up.test' }, 'name'],
      ['/upstreams', { name: 'u', tags: [long] }, 'tags'],
    ] as const) {
      const res = await admin.call('POST', path, body);
      expect(res.status, field).toBe(400);
      expect(res.json.fields, field).toEqual({ [field]: 'length must be at most 1000' });
    }
    expect((await admin.call('POST', '/consumers', { username: 'a'.repeat(1000) })).status).toBe(201);
    expect((await admin.call('POST', '/consumers', { username: 'b', tags: ['a,b'] })).json.fields.tags).toMatch(/^invalid tag 'a,b'/);
  });

  it('refuses key-auth keys no client could send in a header', async () => {
    await admin.call('POST', '/consumers', { username: 'c' });
    for (const key of ['   ', 'a\r\nb', ' lead', 'trail ', 'tab\tkey', 'caf\u00e9', 'nul\u0000']) {
      const res = await admin.call('POST', '/consumers/c/key-auth', { key });
      expect(res.status, JSON.stringify(key)).toBe(400);
      expect(res.json.code).toBe(2);
      expect(Object.keys(res.json.fields)).toEqual(['key']);
      expect(res.text).not.toContain('\r\n');
    }
    expect(admin.store.snapshot().config.keyauth_credentials).toEqual([]);
    expect((await admin.call('POST', '/consumers/c/key-auth', { key: 'k-0123 456' })).status).toBe(201);
  });
});

describe('regex route paths (issue 14)', () => {
  it("refuses at write time, with Kong's 400, a regex path the router cannot compile; nothing is stored", async () => {
    await admin.call('POST', '/services', { name: 's', url: 'http://up.test' });
    for (const path of ['~/fhir/(unclosed', '~/fhir/[z-a]', '~/a{2,1}']) {
      const res = await admin.call('POST', '/services/s/routes', { paths: [path] });
      expect(res.status, path).toBe(400);
      expect(res.json).toMatchObject({ code: 2, name: 'schema violation' });
      expect(res.json.fields.paths).toMatch(new RegExp(`^invalid regex: '${path.slice(1).replace(/[\\[\]{}()/]/g, '\\$&')}' \\(PCRE returned: .+\\)$`));
      expect(res.json.message).toBe(`schema violation (paths: ${res.json.fields.paths})`);
    }
    const put = await admin.call('PUT', '/routes/r', { paths: ['~/(a'], service: { name: 's' } });
    expect(put.status).toBe(400);
    expect(admin.store.snapshot().config.routes).toEqual([]);
  });
});

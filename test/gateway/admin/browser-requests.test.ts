/**
 * Issue 43: the admin API refuses what a web page could make a local browser send: a request addressed to
 * another name (DNS rebinding) or carrying another origin (a cross-site form post), while Kong's own
 * clients (decK, go-kong, curl, `curl -d`: the address as Host, no Origin) keep working.
 * Real HTTP over node:http, which lets a test set Host, and raw sockets for HTTP/1.0.
 */
import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { REFUSED_HOST, REFUSED_ORIGIN, requestOriginCheck } from '../../../src/gateway/admin/request-origin.js';
import { useFreshAdmin } from './harness.js';

const admin = useFreshAdmin();

const port = (): number => Number(new URL(admin.url).port);
const own = (): string => `127.0.0.1:${port()}`;

interface Answer {
  status: number;
  json: any;
}

/** One request to the admin listener on 127.0.0.1 with exactly these headers (Host included). */
function send(method: string, path: string, headers: OutgoingHttpHeaders, body?: string | Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: port(), method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Writes `text` on a new connection; everything the server sent until it closed, or until its first JSON answer. */
function raw(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port(), '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n') && got.endsWith('}')) socket.destroy();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
  });
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const consumers = async (): Promise<string[]> => ((await admin.call('GET', '/consumers')).json.data as { username: string }[]).map((c) => c.username);

describe('Host must name the admin listener (DNS rebinding)', () => {
  it('refuses a foreign Host with 403 and a Kong-style body, and changes nothing', async () => {
    const res = await send('POST', '/consumers', { host: `evil.example:${port()}`, ...FORM }, 'username=pwned');
    expect(res).toEqual({ status: 403, json: { message: REFUSED_HOST } });
    expect(JSON.stringify(res.json)).not.toContain('evil');
    expect(await consumers()).toEqual([]);
  });

  it('refuses a rebinding name that resolves to 127.0.0.1, with any method', async () => {
    for (const method of ['GET', 'POST', 'DELETE', 'OPTIONS']) {
      const res = await send(method, '/consumers', { host: `127.0.0.1.nip.io:${port()}` });
      expect(res.status, method).toBe(403);
      expect(res.json, method).toEqual({ message: REFUSED_HOST });
    }
  });

  it('answers the listen address, localhost and the loopback literals, with the port, in any case', async () => {
    for (const host of [own(), `localhost:${port()}`, `LocalHost:${port()}`, `[::1]:${port()}`, `[0:0::1]:${port()}`]) {
      expect((await send('GET', '/consumers', { host })).status, host).toBe(200);
    }
    const created = await send('POST', '/consumers', { host: `localhost:${port()}`, 'content-type': 'application/json' }, '{"username":"deck"}');
    expect(created.status).toBe(201);
  });

  it('refuses another port, no port (the listener is not on 80), localhost. and other loopback names', async () => {
    const other = port() === 65535 ? 65534 : port() + 1;
    for (const host of [`127.0.0.1:${other}`, '127.0.0.1', 'localhost', `localhost.:${port()}`, `a.localhost:${port()}`, `127.0.0.1:0${port()}`, `127.1:${port()}`, `[::ffff:127.0.0.1]:${port()}`, `[::1]x:${port()}`, `::1:${port()}`]) {
      expect(await send('GET', '/consumers', { host }), host).toEqual({ status: 403, json: { message: REFUSED_HOST } });
    }
  });

  it('refuses an HTTP/1.0 request without Host and an empty Host, answers HTTP/1.0 with Host', async () => {
    expect(await raw('GET /consumers HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.1 403 [^]*"The admin API answers only requests addressed to its own address/);
    expect(await raw(`GET /consumers HTTP/1.0\r\nHost: ${own()}\r\n\r\n`)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await raw('GET /consumers HTTP/1.1\r\nHost:\r\n\r\n')).toMatch(/^HTTP\/1\.1 403 /);
  });

  it('refuses before reading the body', async () => {
    // Headers announce 100 bytes that never come: the answer is the 403, not a wait for the body or a 408.
    const got = await raw(`POST /consumers HTTP/1.1\r\nHost: evil.example:${port()}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"user`);
    expect(got).toMatch(/^HTTP\/1\.1 403 /);
    const form = await raw(`POST /consumers HTTP/1.1\r\nHost: ${own()}\r\nOrigin: http://evil.example\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\nusern`);
    expect(form).toMatch(/^HTTP\/1\.1 403 /);
    expect(await consumers()).toEqual([]);
  });
});

describe('cross-site requests are refused', () => {
  it('refuses a form post from another origin and creates nothing', async () => {
    const res = await send('POST', '/consumers', { host: own(), origin: 'http://evil.example', ...FORM }, 'username=pwned');
    expect(res).toEqual({ status: 403, json: { message: REFUSED_ORIGIN } });
    expect(await consumers()).toEqual([]);
  });

  it('answers a form post without Origin (curl -d) and one from the admin\'s own origin', async () => {
    expect((await send('POST', '/consumers', { host: own(), ...FORM }, 'username=curl')).status).toBe(201);
    expect((await send('POST', '/consumers', { host: own(), origin: `http://${own()}`, 'sec-fetch-site': 'same-origin', ...FORM }, 'username=page')).status).toBe(201);
    expect((await send('POST', '/consumers', { host: `localhost:${port()}`, origin: `http://LOCALHOST:${port()}`, ...FORM }, 'username=page2')).status).toBe(201);
    expect(await consumers()).toEqual(['curl', 'page', 'page2']);
  });

  it('refuses Origin: null, another scheme or port, a multipart, text/plain or JSON post from another origin', async () => {
    const boundary = 'x0';
    const multipart = `--${boundary}\r\nContent-Disposition: form-data; name="username"\r\n\r\npwned\r\n--${boundary}--\r\n`;
    const cases: [OutgoingHttpHeaders, string][] = [
      [{ origin: 'null', ...FORM }, 'username=pwned'],
      [{ origin: `https://${own()}`, ...FORM }, 'username=pwned'],
      [{ origin: `http://127.0.0.1:${port() === 65535 ? 65534 : port() + 1}`, ...FORM }, 'username=pwned'],
      [{ origin: `http://${own()}/`, ...FORM }, 'username=pwned'],
      [{ origin: 'http://evil.example', 'content-type': `multipart/form-data; boundary=${boundary}` }, multipart],
      [{ origin: 'http://evil.example', 'content-type': 'text/plain' }, '{"username":"pwned"}'],
      [{ origin: 'http://evil.example', 'content-type': 'application/json' }, '{"username":"pwned"}'],
    ];
    for (const [headers, body] of cases) {
      expect(await send('POST', '/consumers', { host: own(), ...headers }, body), JSON.stringify(headers)).toEqual({ status: 403, json: { message: REFUSED_ORIGIN } });
    }
    expect(await consumers()).toEqual([]);
  });

  it('refuses Sec-Fetch-Site cross-site and same-site for every method, answers same-origin and none', async () => {
    for (const site of ['cross-site', 'same-site']) {
      expect(await send('GET', '/consumers', { host: own(), 'sec-fetch-site': site }), site).toEqual({ status: 403, json: { message: REFUSED_ORIGIN } });
      expect((await send('POST', '/consumers', { host: own(), 'sec-fetch-site': site, ...FORM }, 'username=pwned')).status, site).toBe(403);
    }
    expect(await consumers()).toEqual([]);
    expect((await send('GET', '/consumers', { host: own(), 'sec-fetch-site': 'none' })).status).toBe(200);
    expect((await send('GET', '/consumers', { host: own(), 'sec-fetch-site': 'same-origin' })).status).toBe(200);
  });
});

describe('which hosts each kind of listener accepts', () => {
  const ok = (check: ReturnType<typeof requestOriginCheck>, host: string, p = 8001): boolean => check({ host }, p) === null;

  it('a specific non-loopback address: that address only', () => {
    const check = requestOriginCheck('10.1.2.3');
    expect(ok(check, '10.1.2.3:8001')).toBe(true);
    expect(ok(check, 'localhost:8001')).toBe(false);
    expect(ok(check, '127.0.0.1:8001')).toBe(false);
    expect(ok(check, '10.1.2.3:8002')).toBe(false);
    expect(ok(check, '10.1.2.3', 80)).toBe(true);
    expect(ok(check, '10.1.2.3:80', 80)).toBe(true);
  });

  it('an IPv6 loopback or localhost listener: the loopback names', () => {
    for (const listen of ['::1', 'localhost', '127.0.0.2']) {
      const check = requestOriginCheck(listen);
      for (const host of ['localhost:8001', '127.0.0.1:8001', '[::1]:8001']) expect(ok(check, host), `${listen} ${host}`).toBe(true);
      expect(ok(check, 'evil.example:8001'), listen).toBe(false);
    }
    expect(ok(requestOriginCheck('127.0.0.2'), '127.0.0.2:8001')).toBe(true);
  });

  it('a wildcard listener: localhost and every interface address, nothing else', () => {
    const addresses = Object.values(networkInterfaces())
      .flatMap((list) => list ?? [])
      .map((i) => (i.family === 'IPv6' ? `[${i.address}]` : i.address));
    expect(addresses.length).toBeGreaterThan(0);
    for (const listen of ['0.0.0.0', '::']) {
      const check = requestOriginCheck(listen);
      for (const host of ['localhost', ...addresses]) expect(ok(check, `${host}:8001`), `${listen} ${host}`).toBe(true);
      expect(ok(check, '0.0.0.0:8001'), listen).toBe(false);
      expect(ok(check, '[::]:8001'), listen).toBe(false);
      expect(ok(check, '192.0.2.77:8001'), listen).toBe(false);
      expect(ok(check, 'evil.example:8001'), listen).toBe(false);
      expect(check({ host: 'localhost:8001', origin: 'http://evil.example' }, 8001)).toBe(REFUSED_ORIGIN);
    }
  });
});

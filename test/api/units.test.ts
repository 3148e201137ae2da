/** Unit rules of the Hospital API: configuration, FHIR URLs, raw Bundle entries. */
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseBundlePage } from '../../src/api/fhir/bundle-page.js';
import { scanPage as scan } from '../../src/api/fhir/page-scan.js';
import { loadConfig } from '../../src/api/server/config.js';
import { escapeTokenPart, identifierQuery, rebaseNextLink, serverBaseFromSelf } from '../../src/api/fhir/fhir-url.js';
import { classifyFailure, deadline } from '../../src/api/fhir/upstream-http.js';
import { HospitalApiError } from '../../src/errors/index.js';
import { removeTempDirs, tempDir } from '../helpers/tmp.js';

afterAll(() => removeTempDirs());

const base = {
  PLATFORM_API_URL: 'http://platform.test/api',
  FHIR_BASE_URL: 'https://gw.test:8443/fhir-api-key-auth',
  FHIR_API_KEY: 'k-123',
  PLATFORM_IDENTIFIER_SYSTEM: 'urn:oid:2.16.764.1.1',
};

function codeOf(fn: () => unknown): { code: string; name: unknown } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HospitalApiError);
    const e = err as HospitalApiError;
    expect(e.exit).toBe(3);
    return { code: e.code, name: e.params.name };
  }
  throw new Error('expected an error');
}

describe('loadConfig', () => {
  it('applies defaults', () => {
    const c = loadConfig({}, base, tempDir());
    expect(c).toMatchObject({ host: '0.0.0.0', port: 9000, platformValidateMethod: 'GET', fhirCa: null, allowedCallers: null, trustProxy: false, maxPages: 1000, logLevel: 'info' });
    expect(c.metricsListen).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(c.fhirBaseUrl.href).toBe('https://gw.test:8443/fhir-api-key-auth');
    expect(c).toMatchObject({ maxConcurrentRequests: 16, queueLength: 64, queueTimeoutMs: 10_000 });
  });

  it.each(['PLATFORM_API_URL', 'FHIR_BASE_URL', 'FHIR_API_KEY'])('names a missing %s', (name) => {
    expect(codeOf(() => loadConfig({}, { ...base, [name]: '' }, tempDir()))).toEqual({ code: 'ERR_CONFIG_MISSING', name });
  });

  const invalid: Array<[string, string]> = [
    ['FHIR_BASE_URL', 'http://gw.test/fhir'],
    ['FHIR_BASE_URL', 'https://user:pw@gw.test/fhir'],
    ['PLATFORM_API_URL', 'not a url'],
    ['PLATFORM_VALIDATE_METHOD', 'PUT'],
    ['PLATFORM_TIMEOUT_MS', 'soon'],
    ['FHIR_TIMEOUT_MS', '0'],
    ['MAX_PAGES', '-1'],
    ['MAX_RESOURCES', '1e3'],
    ['ALLOWED_CALLERS', '10.0.0.0/33'],
    ['ALLOWED_CALLERS', 'example.org'],
    ['TRUST_PROXY', 'maybe'],
    ['METRICS_LISTEN', '9464'],
    ['LOG_LEVEL', 'loud'],
    ['FHIR_CA_FILE', '/nonexistent/ca.pem'],
    ['FHIR_API_KEY', 'two words'],
    ['PLATFORM_IDENTIFIER_SYSTEM', 'no-scheme'],
    ['PLATFORM_IDENTIFIER_SYSTEM', 'urn:has space'],
    ['PLATFORM_ANY_IDENTIFIER_SYSTEM', 'yes'],
    ['API_QUEUE_LENGTH', '-1'],
    ['API_QUEUE_LENGTH', '100001'],
    ['API_QUEUE_TIMEOUT_MS', '99'],
    ['API_QUEUE_TIMEOUT_MS', '10s'],
    // Not below IDLE_TIMEOUT_MS (120000 by default): the idle cut would end the wait first.
    ['API_QUEUE_TIMEOUT_MS', '120000'],
  ];
  it.each(invalid)('names an invalid %s (%s)', (name, value) => {
    expect(codeOf(() => loadConfig({}, { ...base, [name]: value }, tempDir()))).toEqual({ code: 'ERR_CONFIG_INVALID', name });
  });

  it('requires PLATFORM_IDENTIFIER_SYSTEM unless any system is allowed explicitly', () => {
    const { PLATFORM_IDENTIFIER_SYSTEM: _system, ...withoutSystem } = base;
    expect(loadConfig({}, base, tempDir()).identifierSystem).toBe('urn:oid:2.16.764.1.1');
    expect(codeOf(() => loadConfig({}, withoutSystem, tempDir())).code).toBe('ERR_API_IDENTIFIER_SYSTEM_MISSING');
    expect(codeOf(() => loadConfig({}, { ...withoutSystem, PLATFORM_ANY_IDENTIFIER_SYSTEM: 'false' }, tempDir())).code).toBe('ERR_API_IDENTIFIER_SYSTEM_MISSING');
    expect(loadConfig({ anyIdentifierSystem: true }, withoutSystem, tempDir()).identifierSystem).toBeNull();
    expect(loadConfig({}, { ...withoutSystem, PLATFORM_ANY_IDENTIFIER_SYSTEM: 'true' }, tempDir()).identifierSystem).toBeNull();
    // A system, when set, is always the match, even with any allowed.
    expect(loadConfig({ anyIdentifierSystem: true }, base, tempDir()).identifierSystem).toBe('urn:oid:2.16.764.1.1');
  });

  it('reads .env (or --env-file) under the environment, and flags win over both', () => {
    const dir = tempDir();
    writeFileSync(join(dir, '.env'), 'FHIR_API_KEY=from-file\nPORT=9100\nMAX_PAGES=7\n');
    writeFileSync(join(dir, 'other.env'), 'FHIR_API_KEY=other-file\n');
    const c = loadConfig({}, { PLATFORM_API_URL: base.PLATFORM_API_URL, FHIR_BASE_URL: base.FHIR_BASE_URL, PLATFORM_IDENTIFIER_SYSTEM: base.PLATFORM_IDENTIFIER_SYSTEM, MAX_PAGES: '9' }, dir);
    expect(c).toMatchObject({ fhirApiKey: 'from-file', port: 9100, maxPages: 9 });
    expect(loadConfig({ port: 9200, host: '127.0.0.1' }, { ...base, PORT: '9300' }, dir)).toMatchObject({ port: 9200, host: '127.0.0.1' });
    const o = loadConfig({ envFile: 'other.env' }, { PLATFORM_API_URL: base.PLATFORM_API_URL, FHIR_BASE_URL: base.FHIR_BASE_URL, PLATFORM_IDENTIFIER_SYSTEM: base.PLATFORM_IDENTIFIER_SYSTEM }, dir);
    expect(o.fhirApiKey).toBe('other-file');
  });

  it('parses caller lists, trust proxy and METRICS_LISTEN=off', () => {
    const c = loadConfig({}, { ...base, ALLOWED_CALLERS: '10.0.0.0/8, 2001:db8::/32,192.0.2.1', TRUST_PROXY: '10.0.0.1,10.0.0.2', METRICS_LISTEN: 'off' }, tempDir());
    expect(c.allowedCallers?.check('10.9.8.7', 'ipv4')).toBe(true);
    expect(c.allowedCallers?.check('11.0.0.1', 'ipv4')).toBe(false);
    expect(c.allowedCallers?.check('2001:db8::5', 'ipv6')).toBe(true);
    expect(c.trustProxy).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(c.metricsListen).toBeNull();
    expect(loadConfig({}, { ...base, TRUST_PROXY: '2' }, tempDir()).trustProxy).toBe(2);
  });
});

describe('FHIR URLs', () => {
  it('escapes token values (http://hl7.org/fhir/R4/search.html#escaping) and then URL-encodes them', () => {
    expect(escapeTokenPart('a,b|c$d\\e')).toBe('a\\,b\\|c\\$d\\\\e');
    expect(identifierQuery('a|b', 'http://x')).toBe('identifier=http%3A%2F%2Fx%7Ca%5C%7Cb'); // escaped per search.html#escaping, then percent-encoded
    expect(identifierQuery('1+2 3', null)).toBe('identifier=1%2B2%203');
  });

  const gw = new URL('https://gw.test:8443/fhir-api-key-auth');
  const internal = serverBaseFromSelf('http://hapi:8080/fhir/Patient/p1/$everything?_count=1000');

  it('re-bases HAPI internal next links onto FHIR_BASE_URL', () => {
    expect(internal?.href).toBe('http://hapi:8080/fhir');
    expect(rebaseNextLink('http://hapi:8080/fhir?_getpages=abc&_getpagesoffset=20', gw, internal).href).toBe(
      'https://gw.test:8443/fhir-api-key-auth?_getpages=abc&_getpagesoffset=20',
    );
    expect(rebaseNextLink('https://gw.test:8443/fhir-api-key-auth?_getpages=x', gw, null).href).toBe('https://gw.test:8443/fhir-api-key-auth?_getpages=x');
  });

  it.each([
    'https://evil.test/fhir-api-key-auth?_getpages=x',
    'https://gw.test:8443/fhir-api?_getpages=x',
    'https://gw.test:9443/fhir-api-key-auth?_getpages=x',
    'http://hapi:8080/admin?_getpages=x',
    'http://hapi:9090/fhir?_getpages=x',
    'file:///etc/passwd',
  ])('refuses %s', (next) => {
    expect(() => rebaseNextLink(next, gw, internal)).toThrow(/outside FHIR_BASE_URL/);
  });
});

describe('Bundle pages', () => {
  const scanBundlePage = (text: string) => scan(Buffer.from(text));

  it('keeps each entry as raw bytes, including tricky and non-ASCII strings', () => {
    const text = '{ "resourceType":"Bundle", "link":[{"relation":"next","url":"n"}], "entry" : [ {"resource":{"resourceType":"A","id":"1","s":"}]\\"\\\\"}} , {"resource":{"resourceType":"B","id":"2","v":1.50,"name":"สมชาย \u00e9"}} ] }';
    const page = scanBundlePage(text);
    expect(page.entries.map((e) => e.raw.toString())).toEqual(['{"resource":{"resourceType":"A","id":"1","s":"}]\\"\\\\"}}', '{"resource":{"resourceType":"B","id":"2","v":1.50,"name":"สมชาย \u00e9"}}']);
    expect(page.next).toBe('n');
    expect(page.entries.map((e) => e.key)).toEqual(['A/1', 'B/2']);
    expect(JSON.parse(`[${page.interior.toString()}]`)).toHaveLength(2);
  });

  it('parses search pages for resource type, id, mode and identifiers', () => {
    const page = parseBundlePage('{"resourceType":"Bundle","entry":[{"resource":{"resourceType":"Patient","id":"p1","identifier":[{"system":"urn:a","value":"1"},{"value":2},null]},"search":{"mode":"match"}}]}');
    expect(page.entries).toEqual([
      { resourceType: 'Patient', id: 'p1', mode: 'match', identifiers: [{ system: 'urn:a', value: '1' }, { system: null, value: null }, { system: null, value: null }] },
    ]);
  });

  it('scans $everything pages without parsing entries, keyed by fullUrl', () => {
    const text = '{"resourceType":"Bundle","link":[{"relation":"next","url":"n"}],"entry":[{"fullUrl":"http://h/A/1","resource":{"v":1.50}},\n  {"resource":{"resourceType":"B","id":"2"}},{"search":{}}],"total":3}';
    const page = scanBundlePage(text);
    expect(page.next).toBe('n');
    expect(page.entries.map((e) => e.key)).toEqual(['"http://h/A/1"', 'B/2', null]);
    expect(page.entries[0]?.raw.toString()).toBe('{"fullUrl":"http://h/A/1","resource":{"v":1.50}}');
    expect(() => scanBundlePage('{"resourceType":"Bundle","entry":[1,2]}')).toThrow(/non-object/);
    expect(() => scanBundlePage('{"resourceType":"Bundle","entry":[{"a":1} {"b":2}]}')).toThrow(/malformed/);
    expect(() => scanBundlePage('{"resourceType":"Patient","entry":[]}')).toThrow(/not a Bundle/);
    expect(() => scanBundlePage('{"resourceType":"Bundle","entry":[{"a":1}')).toThrow(/malformed/); // truncated
    expect(() => scanBundlePage('{"resourceType":"Bundle","entry":[{"a":"b}]}')).toThrow(/unterminated|malformed/);
    expect(() => scanBundlePage('{"resourceType":"Bundle","entry":null}')).toThrow(/not an array/);
    expect(scanBundlePage('{"resourceType":"Bundle","entry":[]}').entries).toEqual([]);
  });

  // Issue 49: an entry is read once, its scan going on past its leading fullUrl, one bracket deep.
  it('delimits an entry from past its leading fullUrl, brackets and quotes in that URL included', () => {
    const url = '"urn:x:}]{[\\"\\\\"';
    const text = `{"resourceType":"Bundle","entry":[{ "fullUrl" : ${url} ,"resource":{"a":[{"b":"}"}]}},{"fullUrl":"u2"},{"fullUrl":"u3","x":{}}]}`;
    const page = scanBundlePage(text);
    expect(page.entries.map((e) => e.raw.toString())).toEqual([`{ "fullUrl" : ${url} ,"resource":{"a":[{"b":"}"}]}}`, '{"fullUrl":"u2"}', '{"fullUrl":"u3","x":{}}']);
    expect(page.entries.map((e) => e.key)).toEqual([url, '"u2"', '"u3"']);
    expect(JSON.parse(`[${page.interior.toString()}]`)).toHaveLength(3);
    // cut after the fullUrl, inside it, or one bracket short: never a page
    expect(() => scanBundlePage('{"resourceType":"Bundle","entry":[{"fullUrl":"u1"')).toThrow(/unbalanced/);
    expect(() => scanBundlePage('{"resourceType":"Bundle","entry":[{"fullUrl":"u1')).toThrow(/unterminated/);
    expect(() => scanBundlePage('{"resourceType":"Bundle","entry":[{"fullUrl":"u1","r":{"a":1}]}')).toThrow(/malformed|unbalanced/);
  });

  it('rejects what is not a Bundle', () => {
    expect(() => parseBundlePage('<html>')).toThrow(/not JSON/);
    expect(() => scanBundlePage('<html>')).toThrow(/not JSON/);
    expect(() => parseBundlePage('{"resourceType":"OperationOutcome"}')).toThrow(/not a Bundle/);
    expect(parseBundlePage('{"resourceType":"Bundle"}').entries).toEqual([]);
  });
});

/** Issue 49: an upstream request's deadline aborts as AbortSignal.timeout does, and is cleared once the request is done. */
describe('deadline', () => {
  it('aborts its signal with a TimeoutError, which is classified as a time-out', async () => {
    const { signal } = deadline(20);
    await once(signal, 'abort');
    expect((signal.reason as DOMException).name).toBe('TimeoutError');
    expect(classifyFailure(signal.reason).kind).toBe('timeout');
  });

  it('never aborts once cleared', async () => {
    const cleared = deadline(10);
    cleared.clear();
    // Timers fire in order of their due times: by this later one's abort, the cleared one would have fired.
    const later = deadline(40);
    await once(later.signal, 'abort');
    expect(cleared.signal.aborted).toBe(false);
  });
});

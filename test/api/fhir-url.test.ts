/**
 * Next-link re-basing at the edges the request-path tests do not reach (issue 11,
 * mutation testing): a FHIR_BASE_URL at the server root or written with trailing
 * slashes, HAPI serving at its root, links that are not URLs, and refusals that
 * name what was refused so the operator can see which host a link pointed to.
 */
import { describe, expect, it } from 'vitest';
import { rebaseNextLink, serverBaseFromSelf } from '../../src/api/fhir/fhir-url.js';

function refusal(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (err) {
    return err as { code: string; message: string };
  }
  throw new Error('expected a refusal');
}

describe('next links and FHIR_BASE_URL', () => {
  it('accepts links under a base written with one or more trailing slashes, and refuses a sibling path', () => {
    for (const href of ['https://gw.test/fhir/', 'https://gw.test/fhir//']) {
      const base = new URL(href);
      expect(rebaseNextLink('https://gw.test/fhir?_getpages=a', base, null).href).toBe('https://gw.test/fhir?_getpages=a');
      expect(rebaseNextLink('https://gw.test/fhir/Patient?_getpages=a', base, null).pathname).toBe('/fhir/Patient');
      expect(refusal(() => rebaseNextLink('https://gw.test/fhirx?_getpages=a', base, null)).code).toBe('ERR_API_FHIR_FOREIGN_LINK');
    }
  });

  it('accepts any path of its origin when FHIR_BASE_URL is the server root', () => {
    const root = new URL('https://gw.test:8443/');
    expect(rebaseNextLink('https://gw.test:8443/?_getpages=a', root, null).href).toBe('https://gw.test:8443/?_getpages=a');
    expect(rebaseNextLink('https://gw.test:8443/Patient/p1/x?_getpages=a', root, null).href).toBe('https://gw.test:8443/Patient/p1/x?_getpages=a');
    expect(refusal(() => rebaseNextLink('https://other.test:8443/?_getpages=a', root, null)).code).toBe('ERR_API_FHIR_FOREIGN_LINK');
  });

  it('re-bases links of a HAPI that serves at its root (self link /Patient/...)', () => {
    const internal = serverBaseFromSelf('http://hapi:8080/Patient/p1/$everything');
    expect(internal?.href).toBe('http://hapi:8080/');
    const gw = new URL('https://gw.test:8443/fhir-api-key-auth');
    expect(rebaseNextLink('http://hapi:8080/?_getpages=abc', gw, internal).href).toBe('https://gw.test:8443/fhir-api-key-auth/?_getpages=abc');
    expect(rebaseNextLink('http://hapi:8080/Patient?_getpages=abc', gw, internal).href).toBe('https://gw.test:8443/fhir-api-key-auth/Patient?_getpages=abc');
  });

  it('reads no server base from a self link that is missing, not a URL or names no Patient', () => {
    expect(serverBaseFromSelf(undefined)).toBeNull();
    expect(serverBaseFromSelf('')).toBeNull();
    expect(serverBaseFromSelf('not a url')).toBeNull();
    expect(serverBaseFromSelf('http://hapi:8080/fhir/Observation?_getpages=x')).toBeNull();
  });

  it('answers a next link that is not a URL as an unusable FHIR response', () => {
    const err = refusal(() => rebaseNextLink('http://[broken', new URL('https://gw.test/fhir'), null));
    expect(err.code).toBe('ERR_API_FHIR_BAD_RESPONSE');
    expect(err.message).toContain('next link is not a URL');
  });

  it('names the refused scheme or origin in the refusal', () => {
    const gw = new URL('https://gw.test:8443/fhir');
    const internal = new URL('http://hapi:8080/fhir');
    const scheme = refusal(() => rebaseNextLink('file:///etc/passwd', gw, internal));
    expect([scheme.code, scheme.message]).toEqual(['ERR_API_FHIR_FOREIGN_LINK', expect.stringContaining('(file:)')]);
    const origin = refusal(() => rebaseNextLink('https://evil.test/fhir?_getpages=x', gw, internal));
    expect(origin.message).toContain('(https://evil.test)');
    const path = refusal(() => rebaseNextLink('http://hapi:8080/admin?_getpages=x', gw, internal));
    expect(path.message).toContain('(http://hapi:8080)');
  });
});

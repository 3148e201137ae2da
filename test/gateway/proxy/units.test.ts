/** Pure pieces of the proxy: path normalisation, host wildcards and route order, cors origins, rate windows, Accept. */
import { describe, expect, it } from 'vitest';
import type { Route } from '../../../src/gateway/model/types.js';
import { normaliseOrigin } from '../../../src/gateway/plugins/cors/handler.js';
import { windowOf } from '../../../src/gateway/plugins/rate-limiting/windows.js';
import { responseType } from '../../../src/gateway/proxy/kong-response.js';
import { normalisePath } from '../../../src/gateway/proxy/normalise-path.js';
import { Router } from '../../../src/gateway/proxy/router.js';

function r(id: string, fields: Partial<Route>): { route: Route; target: string } {
  return { route: { id, created_at: 1, paths: null, hosts: null, methods: null, headers: null, ...fields } as Route, target: id };
}

describe('proxy units', () => {
  it('normalises paths like Kong (dot segments, merged slashes, unreserved escapes)', () => {
    expect(normalisePath('/a/b')).toBe('/a/b');
    expect(normalisePath('/a/./b/../c')).toBe('/a/c');
    expect(normalisePath('//a///b/')).toBe('/a/b/');
    expect(normalisePath('/%61pi/%2F')).toBe('/api/%2F');
    expect(normalisePath('/../etc')).toBeNull();
  });

  it('orders routes by criteria, then longest prefix; matches host wildcards and ports', () => {
    const router = new Router([
      r('short', { paths: ['/a'] }),
      r('long', { paths: ['/a/b'] }),
      r('host', { paths: ['/a'], hosts: ['*.example.com'] }),
      r('method', { paths: ['/a/b'], methods: ['POST'] }),
      r('regex', { paths: ['~/r/[0-9]+'] }),
    ]);
    expect(router.match('GET', 'x', '/a/b/c', {})?.target).toBe('long');
    expect(router.match('GET', 'x', '/a/x', {})?.target).toBe('short');
    expect(router.match('GET', 'API.example.com:8000', '/a/b', {})?.target).toBe('host');
    expect(router.match('POST', 'x', '/a/b', {})?.target).toBe('method');
    expect(router.match('GET', 'x', '/z', {})).toBeNull();
    expect(router.match('GET', 'x', '/r/12/x', {})).toMatchObject({ target: 'regex', prefix: '/r/12' });
  });

  it('normalises origins for cors', () => {
    expect(normaliseOrigin('https://A.example:443')).toBe('https://a.example');
    expect(normaliseOrigin('http://a.example:8080')).toBe('http://a.example:8080');
  });

  it('aligns rate-limiting windows to the calendar (UTC)', () => {
    const t = Date.UTC(2026, 1, 14, 10, 30, 15, 500);
    expect(windowOf('minute', t)).toEqual([Date.UTC(2026, 1, 14, 10, 30), Date.UTC(2026, 1, 14, 10, 31)]);
    expect(windowOf('month', t)).toEqual([Date.UTC(2026, 1, 1), Date.UTC(2026, 2, 1)]);
    expect(windowOf('year', t)).toEqual([Date.UTC(2026, 0, 1), Date.UTC(2027, 0, 1)]);
  });

  it('negotiates error bodies from Accept like Kong', () => {
    expect(responseType(undefined)).toBe('application/json; charset=utf-8');
    expect(responseType('text/html,application/json;q=0.9')).toBe('text/html; charset=utf-8');
    expect(responseType('application/xml;q=0.2, text/plain;q=0.8')).toBe('text/plain; charset=utf-8');
    expect(responseType('image/png')).toBe('application/json; charset=utf-8');
  });
});

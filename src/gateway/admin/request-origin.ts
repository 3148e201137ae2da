/**
 * Requests a web page could make a local browser send to the admin API (issue 43). The admin API has no
 * authentication (as in Kong), so without these checks a page could drive it:
 *
 * - DNS rebinding: a page at http://evil.example:8001 re-points evil.example at 127.0.0.1 and then reads
 *   and writes the admin API as its own origin. The browser still sends `Host: evil.example:8001`, so a
 *   request is answered only when its Host names the listener's own address.
 * - Cross-site requests: a form post (urlencoded, multipart, text/plain) needs no CORS preflight, and the
 *   admin API parses all three. A browser marks such requests with `Origin` and `Sec-Fetch-Site`.
 *
 * Kong's admin API has neither check: it answers any Host and any Origin, and Kong's guidance is to keep
 * admin_listen on loopback (and RBAC, in Kong Enterprise). Kong's own clients (decK, go-kong, curl) send
 * the address they were given as Host and no Origin, so they are unaffected.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { canonicalIpv6 } from '../../util/ip-list.js';
import { isLoopback } from '../../util/listen-address.js';

export const REFUSED_HOST = 'The admin API answers only requests addressed to its own address (Host header)';
export const REFUSED_ORIGIN = 'The admin API refuses requests sent from another web origin';

/** An address as it appears in a Host header: lowercase, IPv6 in brackets and canonical. */
function hostName(address: string): string {
  const a = address.toLowerCase();
  return isIPv6(a) ? `[${canonicalIpv6(a)}]` : a;
}

/** `name[:port]` of a Host header (or of an Origin after `http://`); null when it is not one. */
function splitHost(value: string): { name: string; port: string | null } | null {
  const v = value.toLowerCase();
  if (v.startsWith('[')) {
    const end = v.indexOf(']');
    const ip = v.slice(1, end);
    const rest = v.slice(end + 1);
    if (end < 0 || !isIPv6(ip) || (rest !== '' && !rest.startsWith(':'))) return null;
    return { name: `[${canonicalIpv6(ip)}]`, port: rest === '' ? null : rest.slice(1) };
  }
  const colon = v.indexOf(':');
  if (colon !== v.lastIndexOf(':')) return null;
  return colon < 0 ? { name: v, port: null } : { name: v.slice(0, colon), port: v.slice(colon + 1) };
}

/**
 * The check for an admin listener on `listenHost`: returns the 403 message for a request to refuse, or
 * null. `port` is the port the request arrived on (the socket's local port).
 *
 * Host must be the listen address with the port (no port only when it is 80), case-insensitive. On
 * loopback, localhost, 127.0.0.1 and [::1] too; on a wildcard (0.0.0.0, ::), localhost and every address
 * of this host's interfaces (not the wildcard itself). Nothing else: no other name, no `localhost.`, no
 * missing Host (HTTP/1.0; Node answers 400 to an HTTP/1.1 request without one).
 * A request carrying an Origin other than http://<an accepted Host> (`null` included), or a
 * Sec-Fetch-Site other than same-origin or none, is refused whatever its method or content type:
 * the admin API grants no CORS, so no page of another origin has a use for it.
 */
export function requestOriginCheck(listenHost: string): (headers: IncomingHttpHeaders, port: number | undefined) => string | null {
  const own = hostName(listenHost);
  const wildcard = own === '0.0.0.0' || own === '[::]';
  const names = new Set(wildcard ? [] : [own]);
  if (wildcard || isLoopback(listenHost.toLowerCase()) || own === '[::1]') for (const n of ['localhost', '127.0.0.1', '[::1]']) names.add(n);

  const nameAccepted = (name: string): boolean =>
    names.has(name) || (wildcard && Object.values(networkInterfaces()).some((list) => list?.some((i) => hostName(i.address) === name)));
  const hostAccepted = (value: string | undefined, port: number | undefined): boolean => {
    const host = value === undefined ? null : splitHost(value);
    if (!host || port === undefined) return false;
    return (host.port === null ? port === 80 : host.port === String(port)) && nameAccepted(host.name);
  };

  return (headers, port) => {
    if (!hostAccepted(headers.host, port)) return REFUSED_HOST;
    const origin = headers.origin;
    if (origin !== undefined && !(origin.toLowerCase().startsWith('http://') && hostAccepted(origin.slice('http://'.length), port))) return REFUSED_ORIGIN;
    const site = headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') return REFUSED_ORIGIN;
    return null;
  };
}

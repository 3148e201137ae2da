/**
 * Host, IP and SNI checks as Kong's kong/tools/ip.lua (normalize_ip,
 * check_hostname) and kong/db/schema/typedefs.lua (validate_host,
 * validate_wildcard_host, validate_sni) apply them, written as single passes
 * over the string: no regular expression, so no input can make them take more
 * than linear time (issue 12: the regex this replaces backtracked
 * exponentially, 4.6 s for 28 characters).
 *
 * One addition to Kong: a hostname is at most 253 characters and each label
 * at most 63 (RFC 1035 §2.3.4). Kong stores longer names and fails at DNS time.
 */

export type HostType = 'ipv4' | 'ipv6' | 'name';
export interface NormalizedHost {
  type: HostType;
  host: string;
  port: number | null;
}
export type NormalizeResult = { ok: true; value: NormalizedHost } | { ok: false; error: string };

const MAX_HOSTNAME = 253;
const MAX_LABEL = 63;

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const isHex = (c: number): boolean => isDigit(c) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);
const isAlpha = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90);

/** Kong's hostname_type: more than one `:` → ipv6; only digits and dots → ipv4; else a name. */
export function hostnameType(name: string): HostType {
  let colons = 0;
  let digitsAndDots = true;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === 58) colons++;
    else if (!(isDigit(c) || c === 46)) digitsAndDots = false;
  }
  if (colons > 1) return 'ipv6';
  return digitsAndDots && name.length - colons > 0 ? 'ipv4' : 'name';
}

/** Parses an all-digit decimal port; null when `s` is not one. */
function parsePort(s: string): number | null {
  if (s.length === 0 || s.length > 10) return null;
  for (let i = 0; i < s.length; i++) if (!isDigit(s.charCodeAt(i))) return null;
  return Number(s);
}

function normalizeIpv4(address: string): NormalizeResult {
  const bad: NormalizeResult = { ok: false, error: `invalid ipv4 address: ${address}` };
  const colon = address.indexOf(':');
  const addr = colon >= 0 ? address.slice(0, colon) : address;
  let port: number | null = null;
  if (colon >= 0) {
    port = parsePort(address.slice(colon + 1));
    if (port === null) return bad;
  }
  const parts = addr.split('.');
  if (parts.length !== 4) return bad;
  const octets: number[] = [];
  for (const p of parts) {
    if (p.length < 1 || p.length > 3) return bad;
    for (let i = 0; i < p.length; i++) if (!isDigit(p.charCodeAt(i))) return bad;
    const n = Number(p);
    if (n > 255) return bad;
    octets.push(n);
  }
  if (port !== null && port > 65535) return { ok: false, error: 'invalid port number' };
  return { ok: true, value: { type: 'ipv4', host: octets.join('.'), port } };
}

function normalizeIpv6(address: string): NormalizeResult {
  const bad: NormalizeResult = { ok: false, error: `invalid ipv6 address: ${address}` };
  let check = address;
  let port: number | null = null;
  if (address.startsWith('[')) {
    const close = address.indexOf(']');
    if (close < 0) return bad;
    check = address.slice(1, close);
    const rest = address.slice(close + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) return { ok: false, error: 'invalid ipv6 address' };
      port = parsePort(rest.slice(1));
      if (port === null) return { ok: false, error: 'invalid ipv6 address' };
      if (port > 65535) return { ok: false, error: 'invalid port number' };
    }
  }
  if (check.startsWith(':')) check = `0${check}`;
  if (check.endsWith(':')) check = `${check}0`;
  const dbl = check.indexOf('::');
  if (dbl >= 0) {
    let colons = 0;
    for (let i = 0; i < check.length; i++) if (check.charCodeAt(i) === 58) colons++;
    if (colons > 8) return bad;
    check = `${check.slice(0, dbl)}:${'0:'.repeat(8 - colons)}${check.slice(dbl + 2)}`;
  }
  const groups = check.split(':');
  if (groups.length !== 8) return bad;
  for (const g of groups) {
    if (g.length < 1 || g.length > 4) return bad;
    for (let i = 0; i < g.length; i++) if (!isHex(g.charCodeAt(i))) return bad;
  }
  return { ok: true, value: { type: 'ipv6', host: groups.map((g) => g.padStart(4, '0')).join(':').toLowerCase(), port } };
}

/** Kong's check_hostname: `[0-9A-Za-z._-]`, optional `:port`, no label ending in `-`, no empty label except a trailing dot. */
function checkHostname(address: string): NormalizeResult {
  const bad: NormalizeResult = { ok: false, error: `invalid hostname: ${address}` };
  let name = address;
  let port: number | null = null;
  const colon = address.lastIndexOf(':');
  if (colon >= 0) {
    const p = parsePort(address.slice(colon + 1));
    if (p !== null) {
      name = address.slice(0, colon);
      if (p > 65535) return { ok: false, error: 'invalid port number' };
      port = p;
    }
  }
  if (name.length === 0 || name.length > MAX_HOSTNAME + (name.endsWith('.') ? 1 : 0)) return bad;
  let labelStart = 0;
  for (let i = 0; i <= name.length; i++) {
    const end = i === name.length;
    const c = end ? 46 : name.charCodeAt(i);
    if (c === 46) {
      const len = i - labelStart;
      // An empty label is allowed only as the last one (a trailing dot).
      if (len === 0 && !end) return bad;
      if (len > MAX_LABEL) return bad;
      if (len > 0 && name.charCodeAt(i - 1) === 45) return bad; // a label ending with '-'
      labelStart = i + 1;
    } else if (!(isAlpha(c) || isDigit(c) || c === 45 || c === 95)) return bad;
  }
  return { ok: true, value: { type: 'name', host: name, port } };
}

/** Kong's normalize_ip: ipv4[:port], ipv6 / [ipv6]:port, or name[:port]. */
export function normalizeIp(address: string): NormalizeResult {
  const type = hostnameType(address);
  if (type === 'ipv4') return normalizeIpv4(address);
  if (type === 'ipv6') return normalizeIpv6(address);
  return checkHostname(address);
}

/** typedefs.host: a name or IP without a port. */
export function checkHost(host: string): string | null {
  const r = normalizeIp(host);
  if (!r.ok && r.error !== 'invalid port number') return `invalid value: ${host}`;
  if (!r.ok || r.value.port !== null) return 'must not have a port';
  return null;
}

/** typedefs.host_with_optional_port. */
export function checkHostWithOptionalPort(host: string): string | null {
  const r = normalizeIp(host);
  return r.ok ? null : r.error;
}

/** Route `hosts`: `*` stands for one label (Kong's validate_host_with_wildcards). */
export function checkRouteHost(host: string): string | null {
  return checkHostWithOptionalPort(host.split('*').join('abc'));
}

/** typedefs.wildcard_host (SNI names): one `*`, leftmost or rightmost; a name, not an IP, without a port. */
export function checkWildcardHost(host: string): string | null {
  let h = host;
  const idx = host.indexOf('*');
  if (idx >= 0) {
    if (idx !== 0 && idx !== host.length - 1) return 'wildcard must be leftmost or rightmost character';
    if (host.indexOf('*', idx + 1) >= 0) return 'only one wildcard must be specified';
    h = host.replace('*', 'wildcard');
  }
  const r = normalizeIp(h);
  if (!r.ok && r.error !== 'invalid port number') return `invalid value: ${h}`;
  if (r.ok && r.value.type !== 'name') return 'must not be an IP';
  if (!r.ok || r.value.port !== null) return 'must not have a port';
  return null;
}

/** typedefs.sni: a name (not an IP) without a port. */
export function checkSni(host: string): string | null {
  const r = normalizeIp(host);
  if (!r.ok && r.error !== 'invalid port number') return `invalid value: ${host}`;
  if (r.ok && r.value.type !== 'name') return 'must not be an IP';
  if (!r.ok || r.value.port !== null) return 'must not have a port';
  return null;
}

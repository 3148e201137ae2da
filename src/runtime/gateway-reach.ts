/**
 * Where a gateway's traffic really goes (issue 43), for the runtimes whose gateway runs on this host:
 * a host name resolved the way the gateway's own connections resolve it, and the addresses a listener
 * answers on. Acceptance compares the two (src/checks/fhir-reach.ts), so no spelling of the FHIR
 * server's address (another host name in /etc/hosts, `0x7f000001`, `2130706433`, `127.1`, an
 * IPv4-mapped IPv6 address, `localhost` in capitals) hides a route to it.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { canonicalIpv6, singleAddressRange } from '../util/ip-list.js';
import type { FhirListener, HostResolution } from './types.js';

/** A host name's resolution is bounded: a resolver that does not answer proves nothing (the route then fails). */
const LOOKUP_TIMEOUT_MS = 10_000;

/**
 * An address as the kernel connects to it: IPv4 dotted quad, or IPv6 in WHATWG's canonical form
 * (lower case, compressed); an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`) is its
 * IPv4 address. A zone (`%eth0`) is dropped. Null when `address` is no IP literal.
 */
export function canonicalIp(address: string): string | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const zone = bare.indexOf('%');
  const ip = zone >= 0 ? bare.slice(0, zone) : bare;
  const family = isIP(ip);
  if (family === 4) return ip;
  if (family !== 6) return null;
  const host = canonicalIpv6(ip);
  if (!host.startsWith('::ffff:')) return host;
  const groups = host.slice('::ffff:'.length).split(':');
  if (groups.length !== 2) return host;
  const [hi, lo] = groups.map((g) => parseInt(g, 16)) as [number, number];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/**
 * The addresses `host` resolves to here, as the native gateway's connections resolve it (undici's
 * connector calls net.connect, which calls dns.lookup: getaddrinfo(3), so the hosts file, DNS and
 * inet_aton(3)'s numeric forms). IP literals are taken as they are.
 */
export async function resolveHere(hosts: readonly string[]): Promise<Map<string, HostResolution>> {
  const out = new Map<string, HostResolution>();
  await Promise.all(
    [...new Set(hosts)].map(async (host) => {
      const literal = canonicalIp(host);
      if (literal) return void out.set(host, { addresses: [literal] });
      let timer: NodeJS.Timeout | undefined;
      try {
        const found = await Promise.race([
          lookup(host, { all: true, verbatim: true }),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(Object.assign(new Error('no answer'), { code: 'ETIMEOUT' })), LOOKUP_TIMEOUT_MS);
          }),
        ]);
        const addresses = [...new Set(found.map((a) => canonicalIp(a.address)).filter((a): a is string => a !== null))];
        out.set(host, addresses.length ? { addresses } : { error: 'no address' });
      } catch (err) {
        out.set(host, { error: String((err as NodeJS.ErrnoException).code ?? (err as Error).message) });
      } finally {
        clearTimeout(timer);
      }
    }),
  );
  return out;
}

/** Every address of this host's interfaces, as ranges of one address each. */
function interfaceRanges(family: 4 | 6): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a && (a.family === 'IPv4' ? 4 : 6) === family)
    .map((a) => singleAddressRange(canonicalIp(a!.address)!));
}

/**
 * The ranges a listener bound to `bind` on this host answers a local client on. A wildcard (0.0.0.0, ::)
 * answers on every address of the host; connecting to the unspecified address reaches the host itself on
 * Linux, so 0.0.0.0 and :: count as the host's too. A loopback listener counts for all of 127.0.0.0/8:
 * wider than one address, so a route is never missed for another loopback spelling (fail closed).
 */
export function listenerRanges(bind: string): string[] {
  const ip = canonicalIp(bind === 'localhost' ? '127.0.0.1' : bind);
  const v4Host = ['127.0.0.0/8', '0.0.0.0/32', ...interfaceRanges(4)];
  if (ip === '0.0.0.0') return v4Host;
  // Node listens dual-stack on ::, as it does by default (net.Server listen, ipv6Only false)
  if (ip === '::') return [...v4Host, '::1/128', '::/128', ...interfaceRanges(6)];
  if (ip === null) return [];
  if (ip.startsWith('127.')) return ['127.0.0.0/8', '0.0.0.0/32'];
  if (ip === '::1') return ['::1/128', '::/128'];
  return [singleAddressRange(ip)];
}

/** One listener on this host: `name` bound to `bind`, answering on `port`. */
export function hostListener(name: string, bind: string, port: number): FhirListener {
  return { name, port, ranges: listenerRanges(bind) };
}

/**
 * Where Kong's traffic really goes on the container runtimes (issue 43). Kong resolves a service's
 * host inside its own container: Docker's embedded DNS (service names, network aliases, container
 * names) and the container's /etc/hosts. So the names are resolved there too, with `getent ahosts`
 * (glibc's resolver, present in Kong's Ubuntu image and in every Debian-based image; it also takes
 * inet_aton(3)'s numeric forms, which Kong's own resolver would send to DNS: wider, so nothing is
 * missed). One `docker exec` for every name; each name is an argument, never shell text.
 *
 * And where the FHIR server answers Kong: HAPI's and the FHIR door's addresses on every network
 * they are attached to (port 8080 inside, templates/compose.yaml), and the door's published port on
 * the host's addresses when it is published beyond loopback (a container reaches the host there).
 */
import { singleAddressRange } from '../../util/ip-list.js';
import { canonicalIp, listenerRanges } from '../gateway-reach.js';
import type { FhirListener, HostResolution } from '../types.js';
import type { DockerCli } from './compose.js';

/** HAPI and the door listen on 8080 in their containers (templates/compose.yaml, templates/stack.yaml). */
export const FHIR_CONTAINER_PORT = 8080;

/** The services that answer FHIR requests without the gateway's credentials: HAPI, and the door in front of it. */
export const FHIR_SERVICES: readonly string[] = ['hapi', 'fhir-door'];

/** Prints `=<name>` before each name's addresses, and `!<exit code>` when getent found none. */
const RESOLVE_SCRIPT = 'for h do printf "=%s\\n" "$h"; getent ahosts "$h" || printf "!%s\\n" "$?"; done';

/** getent(1)'s exit codes. */
const GETENT_EXIT: Readonly<Record<string, string>> = { '2': 'ENOTFOUND (no such name)', '1': 'getent failed', '3': 'getent: no enumeration' };

/** Parses the script's output into one resolution per name asked. */
export function parseResolveOutput(hosts: readonly string[], stdout: string): Map<string, HostResolution> {
  const found = new Map<string, { addresses: Set<string>; error?: string }>();
  let current: { addresses: Set<string>; error?: string } | undefined;
  for (const line of stdout.split('\n')) {
    if (line.startsWith('=')) {
      current = { addresses: new Set() };
      found.set(line.slice(1), current);
    } else if (line.startsWith('!') && current) {
      current.error = GETENT_EXIT[line.slice(1)] ?? `getent exit ${line.slice(1)}`;
    } else if (current) {
      const ip = canonicalIp(line.trim().split(/\s+/)[0] ?? '');
      if (ip) current.addresses.add(ip);
    }
  }
  const out = new Map<string, HostResolution>();
  for (const host of hosts) {
    const r = found.get(host);
    if (!r) out.set(host, { error: 'not resolved in the gateway container' });
    else if (r.addresses.size) out.set(host, { addresses: [...r.addresses] });
    else out.set(host, { error: r.error ?? 'no address' });
  }
  return out;
}

/** Resolves `hosts` inside `container` (Kong's), as Kong's connections would find them. */
export async function resolveInContainer(cli: DockerCli, container: string, hosts: readonly string[]): Promise<Map<string, HostResolution>> {
  const out = new Map<string, HostResolution>();
  const asked: string[] = [];
  for (const host of new Set(hosts)) {
    const literal = canonicalIp(host);
    if (literal) out.set(host, { addresses: [literal] });
    // an argument getent would take for an option: Kong refuses such a host, and it is never a name
    else if (host === '' || host.startsWith('-')) out.set(host, { error: 'not a host name' });
    else asked.push(host);
  }
  if (asked.length === 0) return out;
  const res = await cli.run(['exec', container, 'sh', '-c', RESOLVE_SCRIPT, 'sh', ...asked], { allowFail: true, timeoutMs: 60_000 });
  if (res.exitCode !== 0) {
    for (const host of asked) out.set(host, { error: `the gateway container could not resolve names (exit ${res.exitCode}: ${res.stderr.trim().slice(0, 200)})` });
    return out;
  }
  for (const [host, r] of parseResolveOutput(asked, res.stdout)) out.set(host, r);
  return out;
}

/** A container's addresses on every network it is attached to, as `docker inspect` shows them. */
export interface AttachedAddresses {
  /** e.g. `hapi`, `fhir-door`. */
  service: string;
  addresses: string[];
}

/**
 * Where the FHIR server answers the gateway: HAPI and the door on their container addresses, and the
 * door's published port on the host's addresses unless it is published on loopback alone (the
 * gateway's loopback is its own container's).
 */
export function containerFhirListeners(attached: readonly AttachedAddresses[], published: { bind: string; port: number }): FhirListener[] {
  const out: FhirListener[] = attached.map((a) => ({
    name: a.service === 'hapi' ? 'FHIR server (hapi)' : `FHIR server through ${a.service}`,
    port: FHIR_CONTAINER_PORT,
    ranges: a.addresses.map(singleAddressRange),
  }));
  const onHost = listenerRanges(published.bind).filter((r) => !r.startsWith('127.') && !['0.0.0.0/32', '::1/128', '::/128'].includes(r));
  if (onHost.length) out.push({ name: 'FHIR door (published on the host)', port: published.port, ranges: onHost });
  return out;
}

/**
 * Where the FHIR server answers Kong on a swarm (issue 43): HAPI's and the FHIR door's virtual IPs
 * (a service name resolves to its VIP on the overlay network) and the addresses of their running
 * tasks (`tasks.<service>` and a task's own name resolve there), port 8080 inside; and the door's
 * port, published in host mode on the nodes that run it, at each such node's address (and at every
 * address of this node when it runs here). Names are resolved in the kong-admin task on this node,
 * on the same overlay network as every gateway task (../docker/gateway-reach.ts).
 */
import { FHIR_CONTAINER_PORT, FHIR_SERVICES } from '../container/gateway-reach.js';
import { singleAddressRange } from '../../util/ip-list.js';
import { canonicalIp, listenerRanges } from '../gateway-reach.js';
import type { FhirListener } from '../types.js';
import type { NodeInspect, ServiceInspect, TaskInspect } from './state.js';

/** `10.0.1.7/24` → `10.0.1.7/32`; null when not an address. */
function single(cidr: string): string | null {
  const ip = canonicalIp(cidr.split('/')[0] ?? '');
  return ip ? singleAddressRange(ip) : null;
}

export function swarmFhirListeners(
  stack: string,
  services: readonly ServiceInspect[],
  tasks: readonly TaskInspect[],
  nodes: readonly NodeInspect[],
  door: { port: number; here: string | null },
): FhirListener[] {
  const out: FhirListener[] = [];
  for (const name of FHIR_SERVICES) {
    const service = services.find((s) => s.Spec.Name === `${stack}_${name}`);
    if (!service) continue;
    const running = tasks.filter((t) => t.ServiceID === service.ID && t.DesiredState === 'running');
    const addresses = [
      ...(service.Endpoint?.VirtualIPs ?? []).map((v) => v.Addr ?? ''),
      ...running.flatMap((t) => (t.NetworksAttachments ?? []).flatMap((n) => n.Addresses ?? [])),
    ];
    const ranges = [...new Set(addresses.map(single).filter((r): r is string => r !== null))];
    out.push({ name: name === 'hapi' ? 'FHIR server (hapi)' : `FHIR server through ${name}`, port: FHIR_CONTAINER_PORT, ranges });
    if (name !== 'hapi') {
      const onNodes = running.map((t) => nodes.find((n) => n.ID === t.NodeID));
      const nodeRanges = onNodes.map((n) => single(n?.Status?.Addr ?? '')).filter((r): r is string => r !== null);
      const here = onNodes.some((n) => n && n.ID === door.here) ? listenerRanges('0.0.0.0').filter((r) => !r.startsWith('127.') && r !== '0.0.0.0/32') : [];
      const published = [...new Set([...nodeRanges, ...here])];
      if (published.length) out.push({ name: `${name} (published on its node)`, port: door.port, ranges: published });
    }
  }
  return out;
}

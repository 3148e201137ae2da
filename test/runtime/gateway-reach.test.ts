/**
 * Issue 43, where a gateway's traffic really goes, each runtime's part on its own: names resolved by this
 * host's real resolver (the native gateway's), `getent ahosts` output read as the container runtimes read
 * it, and where the FHIR server answers from each runtime's view. The whole check against real gateways
 * is test/e2e/broken-install.test.ts and test/docker-engine/broken-install.test.ts.
 */
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { fhirResourceType } from '../../src/checks/fhir-routes-closed.js';
import { containerFhirListeners, parseResolveOutput } from '../../src/runtime/container/gateway-reach.js';
import { canonicalIp, listenerRanges, resolveHere } from '../../src/runtime/gateway-reach.js';
import { swarmFhirListeners } from '../../src/runtime/swarm/gateway-reach.js';
import type { ServiceInspect, TaskInspect } from '../../src/runtime/swarm/state.js';

describe("this host's resolver, as the native gateway's connections use it", () => {
  it('gives 127.0.0.1 for the numeric forms inet_aton takes, localhost in any case, and IP literals as they are', async () => {
    const spellings = ['0x7f000001', '2130706433', '127.1', '0177.0.0.1', 'localhost', 'LOCALHOST', '127.0.0.1', '::ffff:7f00:1', '[::ffff:127.0.0.1]'];
    const found = await resolveHere(spellings);
    for (const s of spellings) expect([s, found.get(s)]).toEqual([s, { addresses: ['127.0.0.1'] }]);
  });

  it("resolves the machine's own name through the hosts file, and says why a name has no address", async () => {
    const found = await resolveHere([hostname(), 'no-such-host.invalid']);
    expect(found.get(hostname())).toMatchObject({ addresses: expect.any(Array) });
    expect(found.get('no-such-host.invalid')).toEqual({ error: expect.stringMatching(/ENOTFOUND|EAI_AGAIN|ESERVFAIL/) });
  });

  it('canonical addresses: IPv4-mapped IPv6 is its IPv4 address, IPv6 is compressed lower case, a zone is dropped', () => {
    expect(canonicalIp('::FFFF:7F00:0001')).toBe('127.0.0.1');
    expect(canonicalIp('0:0:0:0:0:0:0:1')).toBe('::1');
    expect(canonicalIp('fe80::1%eth0')).toBe('fe80::1');
    expect(canonicalIp('vm')).toBeNull();
  });

  it("a listener's ranges: a wildcard answers on every address of the host, loopback on 127.0.0.0/8, another address on itself", () => {
    expect(listenerRanges('0.0.0.0')).toEqual(expect.arrayContaining(['127.0.0.0/8', '0.0.0.0/32']));
    expect(listenerRanges('::')).toEqual(expect.arrayContaining(['127.0.0.0/8', '::1/128', '::/128']));
    expect(listenerRanges('127.0.0.1')).toEqual(['127.0.0.0/8', '0.0.0.0/32']);
    expect(listenerRanges('localhost')).toEqual(['127.0.0.0/8', '0.0.0.0/32']);
    expect(listenerRanges('192.0.2.7')).toEqual(['192.0.2.7/32']);
  });
});

describe('inside the kong container (docker, swarm)', () => {
  it("reads getent ahosts' output per name, with the exit code of a name it did not find", () => {
    const out = [
      '=hapi',
      '172.18.0.5      STREAM hapi',
      '172.18.0.5      DGRAM  ',
      '172.18.0.5      RAW    ',
      '=hospital-hapi-1',
      '172.18.0.5      STREAM hospital-hapi-1',
      '=gone',
      '!2',
      '=six',
      '::ffff:172.18.0.9 STREAM six',
      'fd00::9         STREAM six',
      '',
    ].join('\n');
    const r = parseResolveOutput(['hapi', 'hospital-hapi-1', 'gone', 'six', 'unasked'], out);
    expect(Object.fromEntries(r)).toEqual({
      hapi: { addresses: ['172.18.0.5'] },
      'hospital-hapi-1': { addresses: ['172.18.0.5'] },
      gone: { error: 'ENOTFOUND (no such name)' },
      six: { addresses: ['172.18.0.9', 'fd00::9'] },
      unasked: { error: 'not resolved in the gateway container' },
    });
  });

  it("docker: HAPI and the door on their container addresses at 8080; the door's published port on the host's addresses unless on loopback", () => {
    const attached = [{ service: 'hapi', addresses: ['172.18.0.5'] }, { service: 'fhir-door', addresses: ['172.18.0.6', 'fd00::6'] }];
    expect(containerFhirListeners(attached, { bind: '127.0.0.1', port: 18080 })).toEqual([
      { name: 'FHIR server (hapi)', port: 8080, ranges: ['172.18.0.5/32'] },
      { name: 'FHIR server through fhir-door', port: 8080, ranges: ['172.18.0.6/32', 'fd00::6/128'] },
    ]);
    // the gateway's loopback is its own container's: never the host's
    const lan = containerFhirListeners(attached, { bind: '198.51.100.1', port: 18080 });
    expect(lan[2]).toEqual({ name: 'FHIR door (published on the host)', port: 18080, ranges: ['198.51.100.1/32'] });
    const everywhere = containerFhirListeners(attached, { bind: '0.0.0.0', port: 18080 })[2]!;
    expect(everywhere.ranges.some((r) => r.startsWith('127.') || r === '0.0.0.0/32')).toBe(false);
  });

  it('swarm: the virtual IPs and running task addresses of hapi and fhir-door, and the door on the node that runs it', () => {
    const services = [
      { ID: 'sh', Spec: { Name: 'h_hapi' }, Endpoint: { VirtualIPs: [{ Addr: '10.0.1.2/24' }] } },
      { ID: 'sd', Spec: { Name: 'h_fhir-door' }, Endpoint: { VirtualIPs: [{ Addr: '10.0.1.3/24' }] } },
      { ID: 'sk', Spec: { Name: 'h_kong' }, Endpoint: { VirtualIPs: [{ Addr: '10.0.1.4/24' }] } },
    ] as ServiceInspect[];
    const tasks = [
      { ID: 't1', ServiceID: 'sh', DesiredState: 'running', NetworksAttachments: [{ Addresses: ['10.0.1.7/24'] }] },
      { ID: 't0', ServiceID: 'sh', DesiredState: 'shutdown', NetworksAttachments: [{ Addresses: ['10.0.1.6/24'] }] },
      { ID: 't2', ServiceID: 'sd', NodeID: 'n2', DesiredState: 'running', NetworksAttachments: [{ Addresses: ['10.0.1.8/24'] }] },
    ] as TaskInspect[];
    const nodes = [{ ID: 'n1', Status: { Addr: '192.0.2.1' } }, { ID: 'n2', Status: { Addr: '192.0.2.2' } }];
    expect(swarmFhirListeners('h', services, tasks, nodes, { port: 18080, here: 'n1' })).toEqual([
      { name: 'FHIR server (hapi)', port: 8080, ranges: ['10.0.1.2/32', '10.0.1.7/32'] },
      { name: 'FHIR server through fhir-door', port: 8080, ranges: ['10.0.1.3/32', '10.0.1.8/32'] },
      { name: 'fhir-door (published on its node)', port: 18080, ranges: ['192.0.2.2/32'] },
    ]);
  });
});

describe('what counts as FHIR data in an answer', () => {
  it('a JSON object with a string resourceType; a body longer than what is read, by its first resourceType pair', () => {
    expect(fhirResourceType('{"resourceType":"Bundle","type":"searchset"}', true)).toBe('Bundle');
    expect(fhirResourceType('{"message":"No API key found in request"}', true)).toBeNull();
    expect(fhirResourceType('[{"resourceType":"Patient"}]', true)).toBeNull();
    expect(fhirResourceType('{"resourceType":42}', true)).toBeNull();
    expect(fhirResourceType('<html>"resourceType":"Patient"</html>', true)).toBeNull();
    expect(fhirResourceType('{"id":"x", "resourceType" : "CapabilityStatement", "rest": [', false)).toBe('CapabilityStatement');
    expect(fhirResourceType('<html>"resourceType":"Patient"', false)).toBeNull();
  });
});

/** Certificates and SNIs drive the TLS proxy as in Kong (kong/runloop/certificate.lua), through the real HTTPS listener. */
import { randomUUID } from 'node:crypto';
import { connect, type PeerCertificate } from 'node:tls';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCa, issueCertificate, type KeyAndCert } from '../../../src/tls/pki.js';
import { emptyConfig, route, service, Snapshots, startProxy, startUpstream } from './harness.js';

/** The certificate the listener presents for `servername` (CN), verified against `ca`. */
function served(port: number, servername: string, ca: string): Promise<{ cn: string; authorized: boolean }> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, servername, ca, rejectUnauthorized: false }, () => {
      const cert: PeerCertificate = s.getPeerCertificate();
      resolve({ cn: String(cert.subject.CN), authorized: s.authorized });
      s.end();
    });
    s.on('error', reject);
  });
}

describe('certificates and SNIs on the TLS proxy', () => {
  let upstream: { server: Server; port: number };
  let gw: Awaited<ReturnType<typeof startProxy>>;
  const snapshots = new Snapshots();
  let ca: KeyAndCert;

  beforeAll(async () => {
    upstream = await startUpstream();
    ca = generateCa({ commonName: 'SNI Test CA' });
    const issue = (cn: string, hosts: string[]) => issueCertificate(ca, { commonName: cn, hosts, usage: 'server' });
    const listener = issue('listener-default', ['127.0.0.1']);
    const fhir = issue('fhir.hospital.example', ['fhir.hospital.example']);
    const wild = issue('wildcard.hospital.example', ['*.hospital.example']);
    const suffix = issue('suffix-wildcard', ['portal.test']);
    const c = emptyConfig();
    route(c, service(c, { host: '127.0.0.1', port: upstream.port }), { paths: ['/'] });
    const certRow = (k: KeyAndCert) => ({ id: randomUUID(), cert: k.certPem, key: k.keyPem, tags: null });
    const certs = [certRow(fhir), certRow(wild), certRow(suffix)];
    Object.assign(c, {
      certificates: certs,
      snis: [
        { id: randomUUID(), name: 'fhir.hospital.example', certificate: { id: certs[0]!.id } },
        { id: randomUUID(), name: '*.hospital.example', certificate: { id: certs[1]!.id } },
        { id: randomUUID(), name: 'portal.*', certificate: { id: certs[2]!.id } },
      ],
    });
    snapshots.set(c);
    gw = await startProxy(snapshots, { cert: listener.certPem, key: listener.keyPem });
  });
  afterAll(async () => {
    await gw.close();
    upstream.server.close();
  });

  it('serves the certificate of the SNI with the exact name, verified by the client', async () => {
    expect(await served(gw.listeners.https!.port, 'fhir.hospital.example', ca.certPem)).toEqual({ cn: 'fhir.hospital.example', authorized: true });
  });

  it('matches wildcard SNIs as Kong does: *.name replaces the first label, name.* the last', async () => {
    const port = gw.listeners.https!.port;
    expect((await served(port, 'api.hospital.example', ca.certPem)).cn).toBe('wildcard.hospital.example');
    expect((await served(port, 'portal.anything', ca.certPem)).cn).toBe('suffix-wildcard');
    // Only one label is replaced: a.b.hospital.example is not covered by *.hospital.example.
    expect((await served(port, 'a.b.hospital.example', ca.certPem)).cn).toBe('listener-default');
  });

  it("keeps the listener's own certificate as the default", async () => {
    expect((await served(gw.listeners.https!.port, 'unknown.example', ca.certPem)).cn).toBe('listener-default');
  });
});

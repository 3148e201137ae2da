/**
 * Negative check (issue 5): the certificate the gateway presents chains to the
 * CA and names the host. The TLS handshake itself verifies both (Node's default
 * chain and identity checks); the certificate is kept for the record.
 */
import { connect } from 'node:tls';
import { isIP } from 'node:net';
import { X509Certificate } from 'node:crypto';
import { describeCertificate } from '../tls/inspect.js';
import { describeFailure, isTlsFailure } from './http.js';
import type { Check } from './types.js';

function handshake(host: string, port: number, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    // rejectUnauthorized stated, not defaulted: the default follows the environment.
    const socket = connect({ host, port, ca, rejectUnauthorized: true, ...(isIP(host) ? {} : { servername: host }) });
    socket.setTimeout(10_000, () => socket.destroy(new Error('TLS handshake timed out')));
    socket.once('secureConnect', () => {
      const raw = socket.getPeerCertificate().raw;
      socket.end();
      resolve(new X509Certificate(raw));
    });
    socket.once('error', reject);
  });
}

export const certificateChain: Check = {
  id: 'certificate-chain',
  spec: 'extra',
  title: 'The gateway certificate chains to the CA and names the host',
  mandatory: true,
  async run(ctx) {
    const host = ctx.config.hosts[0] ?? 'localhost';
    const port = ctx.config.ports.gatewayHttps;
    let cert: X509Certificate;
    try {
      cert = await handshake(host, port, ctx.caPem);
    } catch (err) {
      if (!isTlsFailure(err)) {
        return { status: 'fail', summary: 'the gateway does not answer', detail: `${host}:${port}: ${describeFailure(err)}`, hint: 'Is the gateway running?' };
      }
      return {
        status: 'fail',
        summary: 'the gateway certificate does not verify',
        detail: `${host}:${port}: ${describeFailure(err)} (CA: ${ctx.caPath})`,
        hint: 'The gateway certificate must be issued by this CA and name the host (its SAN).',
      };
    }
    const info = describeCertificate(cert);
    ctx.shared.gatewayCertificate = info;
    const unnamed = ctx.config.hosts.filter((h) => (isIP(h) ? cert.checkIP(h) : cert.checkHost(h)) === undefined);
    if (unnamed.length) {
      return { status: 'fail', summary: `the certificate does not name ${unnamed.join(', ')}`, detail: info.subjectAltName ?? '' };
    }
    return { status: 'pass', summary: `${info.subject}, issued by ${info.issuer}`, detail: `SAN ${info.subjectAltName ?? 'none'}; SHA-256 ${info.fingerprint256}` };
  },
};

/**
 * Negative check (issue 5): the certificate the gateway presents chains to the
 * CA and names the host. The TLS handshake (facts.ts, once per run) verifies both
 * (Node's default chain and identity checks); the certificate goes to the record.
 */
import { isIP } from 'node:net';
import { describeFailure, isTlsFailure } from './http.js';
import type { Check } from './types.js';

export const certificateChain: Check = {
  id: 'certificate-chain',
  spec: 'extra',
  title: 'The gateway certificate chains to the CA and names the host',
  mandatory: true,
  async run(ctx) {
    const host = ctx.config.hosts[0] ?? 'localhost';
    const port = ctx.config.ports.gatewayHttps;
    let cert;
    try {
      cert = await ctx.facts.gatewayCertificate();
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
    const { x509, info } = cert;
    const findings = { gatewayCertificate: info };
    const unnamed = ctx.config.hosts.filter((h) => (isIP(h) ? x509.checkIP(h) : x509.checkHost(h)) === undefined);
    if (unnamed.length) {
      return { status: 'fail', summary: `the certificate does not name ${unnamed.join(', ')}`, detail: info.subjectAltName ?? '', findings };
    }
    return { status: 'pass', summary: `${info.subject}, issued by ${info.issuer}`, detail: `SAN ${info.subjectAltName ?? 'none'}; SHA-256 ${info.fingerprint256}`, findings };
  },
};

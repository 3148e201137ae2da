/**
 * Certificates and SNIs drive the TLS proxy as in Kong
 * (kong/runloop/certificate.lua find_certificate): the server name the client
 * sends picks the certificate of the SNI entity with that exact name, else of
 * the SNI `*.<name without its first label>` (prefix wildcard), else of
 * `<name without its last label>.*` (suffix wildcard); otherwise the
 * listener's own certificate (--cert/--key) is served. Certificate and key
 * pairs (and the optional cert_alt/key_alt pair) become SecureContexts once
 * per configuration version.
 */
import { createSecureContext, type SecureContext } from 'node:tls';
import type { GatewayConfig } from '../model/types.js';
import { proxyCollections } from './entities.js';

export interface CertificateTable {
  lookup(servername: string): SecureContext | null;
}

/** @throws when a certificate referenced by an SNI cannot be loaded (bad PEM, key mismatch) */
export function compileCertificates(config: Readonly<GatewayConfig>): CertificateTable | null {
  const { certificates, snis } = proxyCollections(config);
  if (snis.length === 0) return null;
  const contexts = new Map<string, SecureContext>();
  const byName = new Map<string, SecureContext>();
  for (const sni of snis) {
    const certId = sni.certificate?.id;
    let ctx = contexts.get(certId);
    if (ctx === undefined) {
      const cert = certificates.find((c) => c.id === certId);
      if (!cert) throw new Error(`sni ${sni.id}: certificate ${certId} not found`);
      try {
        ctx = createSecureContext({
          cert: cert.cert_alt ? [cert.cert, cert.cert_alt] : cert.cert,
          key: cert.key_alt ? [cert.key, cert.key_alt] : cert.key,
        });
      } catch (err) {
        throw new Error(`certificate ${cert.id}: ${(err as Error).message}`);
      }
      contexts.set(certId, ctx);
    }
    byName.set(sni.name.toLowerCase(), ctx);
  }
  return {
    lookup(servername: string): SecureContext | null {
      const name = servername.toLowerCase();
      const exact = byName.get(name);
      if (exact !== undefined) return exact;
      const firstDot = name.indexOf('.');
      if (firstDot > 0) {
        const prefix = byName.get(`*${name.slice(firstDot)}`);
        if (prefix !== undefined) return prefix;
      }
      const lastDot = name.lastIndexOf('.');
      if (lastDot > 0) {
        const suffix = byName.get(`${name.slice(0, lastDot)}.*`);
        if (suffix !== undefined) return suffix;
      }
      return null;
    },
  };
}

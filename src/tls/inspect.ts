/**
 * What a certificate says, as the acceptance record and `verify` report it:
 * subject, issuer, serial, validity and SHA-256 fingerprint (node:crypto).
 */
import { X509Certificate } from 'node:crypto';
import { HospitalApiError } from '../errors/index.js';

export interface CertificateInfo {
  subject: string;
  issuer: string;
  serialNumber: string;
  validFrom: string;
  validTo: string;
  fingerprint256: string;
  subjectAltName: string | null;
}

export function describeCertificate(cert: X509Certificate): CertificateInfo {
  return {
    subject: cert.subject.replace(/\n/g, ', '),
    issuer: cert.issuer.replace(/\n/g, ', '),
    serialNumber: cert.serialNumber,
    validFrom: new Date(cert.validFrom).toISOString(),
    validTo: new Date(cert.validTo).toISOString(),
    fingerprint256: cert.fingerprint256,
    subjectAltName: cert.subjectAltName ?? null,
  };
}

/** Parses every certificate in a PEM bundle (a CA file may hold several). */
export function parsePemBundle(pem: string, path = '<pem>'): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    throw new HospitalApiError('ERR_TLS_MATERIAL', { path, detail: 'no PEM certificate found' });
  }
  try {
    return blocks.map((b) => new X509Certificate(b));
  } catch (err) {
    throw new HospitalApiError('ERR_TLS_MATERIAL', { path, detail: (err as Error).message }, { cause: err });
  }
}

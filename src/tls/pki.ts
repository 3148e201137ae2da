/**
 * The hospital's PKI, with node-forge: a CA, server certificates for the
 * gateway (SAN names and addresses), and a record-signing certificate.
 * Keys come from node:crypto (native, ~10x faster than forge's JS RSA) and are
 * imported into forge for signing; forge has no EC certificates, so RSA-2048.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';
import { HospitalApiError } from '../errors/index.js';

/**
 * The longest a server certificate issued here lives: 365 days, so that with
 * the 5-minute backdated start it stays within the 366 days of Mozilla's
 * Server Side TLS guidelines (intermediate configuration: "Certificate
 * lifespan: 90 days (recommended) to 366 days"), which Kong's default
 * `ssl_cipher_suite = intermediate` follows, and well under the 398 days of
 * the CA/Browser Forum Baseline Requirements (section 6.3.2). `cert renew`
 * issues the next one.
 */
export const SERVER_CERT_MAX_DAYS = 365;

/** Record-signing certificates are no TLS server's: they keep the longer default. */
const SIGNING_CERT_DAYS = 825;

export interface KeyAndCert {
  certPem: string;
  keyPem: string;
}

export interface CaOptions {
  commonName?: string;
  organization?: string;
  days?: number;
}

export type CertificateUsage = 'server' | 'signing';

export interface IssueOptions {
  commonName: string;
  /** DNS names and IP addresses the certificate is valid for (server usage). */
  hosts?: string[];
  usage: CertificateUsage;
  days?: number;
  organization?: string;
  /** Backdate notBefore by this many seconds (clock skew between hosts). */
  backdateSeconds?: number;
}

function newKeyPair(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey; keyPem: string } {
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const forgeKey = forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey;
  return {
    privateKey: forgeKey,
    publicKey: forge.pki.setRsaPublicKey(forgeKey.n, forgeKey.e),
    keyPem: privateKey,
  };
}

/** A positive serial of 16 random bytes (RFC 5280 allows up to 20 octets). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] as number) & 0x7f;
  return bytes.toString('hex');
}

function validity(cert: forge.pki.Certificate, days: number, backdateSeconds: number): void {
  const now = Date.now();
  cert.validity.notBefore = new Date(now - backdateSeconds * 1000);
  cert.validity.notAfter = new Date(now + days * 86_400_000);
}

function subject(commonName: string, organization?: string): forge.pki.CertificateField[] {
  const attrs: forge.pki.CertificateField[] = [{ name: 'commonName', value: commonName }];
  if (organization) attrs.push({ name: 'organizationName', value: organization });
  return attrs;
}

/** Creates a self-signed CA certificate (CA:true, keyCertSign, cRLSign). */
export function generateCa(options: CaOptions = {}): KeyAndCert {
  const keys = newKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serialNumber();
  validity(cert, options.days ?? 3650, 300);
  const name = subject(options.commonName ?? 'Hospital API CA', options.organization);
  cert.setSubject(name);
  cert.setIssuer(name);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem };
}

function altNames(hosts: string[]): Array<{ type: number; value?: string; ip?: string }> {
  // SAN type 2 is dNSName, type 7 is iPAddress (forge wants the `ip` field for it).
  return hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h }));
}

/** Issues a certificate signed by the CA, for a server or for signing records. */
export function issueCertificate(ca: KeyAndCert, options: IssueOptions): KeyAndCert {
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem);
  const keys = newKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serialNumber();
  const days = options.days ?? (options.usage === 'server' ? SERVER_CERT_MAX_DAYS : SIGNING_CERT_DAYS);
  if (options.usage === 'server' && days > SERVER_CERT_MAX_DAYS) {
    throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--days', detail: `a server certificate lives at most ${SERVER_CERT_MAX_DAYS} days` });
  }
  validity(cert, days, options.backdateSeconds ?? 300);
  cert.setSubject(subject(options.commonName, options.organization));
  cert.setIssuer(caCert.subject.attributes);
  const caSki = caCert.generateSubjectKeyIdentifier().getBytes();
  const extensions: object[] = [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: caSki },
  ];
  if (options.usage === 'server') {
    const hosts = options.hosts?.length ? options.hosts : [options.commonName];
    extensions.push(
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: altNames(hosts) },
    );
  } else {
    // emailProtection: `openssl cms -verify` checks the S/MIME signing purpose.
    extensions.push(
      { name: 'keyUsage', digitalSignature: true, nonRepudiation: true, critical: true },
      { name: 'extKeyUsage', emailProtection: true },
    );
  }
  cert.setExtensions(extensions);
  cert.sign(caKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem };
}

/**
 * The install directory's certificates (tls/ca.pem, tls/gateway.pem,
 * tls/record-signer.pem, tls/audit-seal.pem) and the days each has left: read by `status`,
 * `cert status`, `cert renew` and the Hospital API's certificate gauge, so it
 * lives on the ground floor beside the layout that names those files.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { X509Certificate } from 'node:crypto';
import { parsePemBundle } from '../tls/inspect.js';
import type { InstallPaths } from './layout.js';

/** Fewer days left than this is a warning (`cert status` exits 1, `status` says so). */
export const CERT_WARN_DAYS = 30;

export interface CertificateLifetime {
  name: 'ca' | 'gateway' | 'record-signer' | 'audit-seal';
  path: string;
  subject: string;
  validTo: string;
  /** Whole days until validTo (negative once expired). */
  daysLeft: number;
  fingerprint256: string;
}

/** The install's certificates and the days each has left; a missing file is left out. */
export function certificateLifetimes(paths: InstallPaths, now = Date.now()): CertificateLifetime[] {
  const list: Array<[CertificateLifetime['name'], string]> = [['ca', paths.caCert], ['gateway', paths.gatewayCert], ['record-signer', paths.signerCert], ['audit-seal', paths.auditSealCert]];
  return list.flatMap(([name, path]) => {
    if (!existsSync(path)) return [];
    const c = parsePemBundle(readFileSync(path, 'utf8'), path)[0] as X509Certificate;
    const validTo = new Date(c.validTo);
    return [{ name, path, subject: c.subject.replace(/\n/g, ', '), validTo: validTo.toISOString(), daysLeft: Math.floor((validTo.getTime() - now) / 86_400_000), fingerprint256: c.fingerprint256 }];
  });
}

/**
 * Whether the install has its audit-seal certificate and key (tls/audit-seal.pem,
 * tls/audit-seal.key; issue 46): what each runtime's profile reads to give the
 * Hospital API its seal settings, or none. Written by install (src/install/files.ts),
 * `cert renew` and the upgrade at `up` (src/install/audit-seal-upgrade.ts); never
 * the record signer's, which the API must not hold.
 */
import { existsSync } from 'node:fs';
import type { InstallPaths } from './layout.js';

export function hasAuditSeal(paths: InstallPaths): boolean {
  return existsSync(paths.auditSealCert) && existsSync(paths.auditSealKey);
}

/**
 * `up` of an install from before the audit seal (issue 46): its audit log was
 * sealed with the record signer's key, which the internet-facing Hospital API
 * then held and could sign a forged ACCEPTED record with. Where the install's
 * CA key is at hand (a generated CA), the audit-seal pair is issued here; in
 * every case hospital-api.env is brought to what the runtime's profile names,
 * so the API is never again pointed at the record signer's key (without an
 * audit seal it runs unsealed, and says so).
 */
import { existsSync, readFileSync } from 'node:fs';
import type { InstallConfig } from '../install-dir/install-config.js';
import type { InstallPaths } from '../install-dir/layout.js';
import { writeIfChanged, type FileChange } from '../install-dir/write-if-changed.js';
import { hasAuditSeal } from '../install-dir/audit-seal-files.js';
import { formatEnvFile, readEnvFile } from '../util/env-file.js';
import { profileOf } from '../runtime/profiles.js';
import { chainsTo, issueAuditSeal, roleUsageProblem } from './tls.js';

export interface AuditSealUpgrade {
  changes: FileChange[];
  /** False: no audit-seal pair, so the API runs without seals (a hospital CA whose key install was not given). */
  sealed: boolean;
}

function current(paths: InstallPaths, caPem: string): boolean {
  if (!hasAuditSeal(paths)) return false;
  const certPem = readFileSync(paths.auditSealCert, 'utf8');
  return chainsTo(certPem, caPem) && roleUsageProblem(certPem, 'audit-seal') === null;
}

const SEAL_KEYS = ['AUDIT_SEAL_CERT_FILE', 'AUDIT_SEAL_KEY_FILE'] as const;

/** hospital-api.env with only its seal settings brought to the profile's (every other value and the header kept as they are). */
function withSealSettings(paths: InstallPaths, config: InstallConfig): string {
  const text = readFileSync(paths.apiEnv, 'utf8');
  const header: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('# ')) break;
    header.push(line.slice(2));
  }
  const want: Partial<Record<string, string>> = profileOf(config.runtime).apiEnv(paths, config);
  const values = readEnvFile(paths.apiEnv);
  if (SEAL_KEYS.every((k) => values[k] === want[k])) return text;
  for (const k of SEAL_KEYS) {
    const v = want[k];
    if (v === undefined) delete values[k];
    else values[k] = v;
  }
  return formatEnvFile(values, header.length ? header.join('\n') : undefined);
}

export function upgradeAuditSeal(paths: InstallPaths, config: InstallConfig): AuditSealUpgrade {
  const changes: FileChange[] = [];
  if (!existsSync(paths.caCert) || !existsSync(paths.apiEnv)) return { changes, sealed: hasAuditSeal(paths) };
  const caPem = readFileSync(paths.caCert, 'utf8');
  if (!current(paths, caPem) && existsSync(paths.caKey)) {
    const seal = issueAuditSeal({ certPem: caPem, keyPem: readFileSync(paths.caKey, 'utf8') });
    // the key first: a certificate without its key is never named to the API
    changes.push(writeIfChanged(paths.auditSealKey, seal.keyPem, true), writeIfChanged(paths.auditSealCert, seal.certPem));
  }
  changes.push(writeIfChanged(paths.apiEnv, withSealSettings(paths, config), true));
  return { changes: changes.filter((c) => c.change !== 'unchanged'), sealed: hasAuditSeal(paths) };
}

/**
 * The key the audit log seals with, followed across `cert renew` (issue 46). The API reads the
 * audit-seal certificate and key at start (AUDIT_SEAL_CERT_FILE, AUDIT_SEAL_KEY_FILE); renew replaces
 * both files (each written to a temporary name and renamed over the old one: src/util's atomic writes),
 * and the running API must seal with the new pair from its next seal, not from its next start.
 *
 * Before each seal the two files are looked at (stat: inode, size, modification time; a seal is at
 * most one a minute per log, so two stats are nothing). When either changed, both are read again and
 * the pair is taken only when it can seal: the certificate is the audit seal's (cms-verify.ts
 * signerRoleProblem), the key is the certificate's (same public key) and it signs. Otherwise the log
 * goes on sealing with the pair it has (still a valid seal of the install's CA) and looks again at the
 * next seal: renew writes the key before the certificate, so for a moment the files do not match, and
 * a file half copied (docker's container copy) is not a certificate yet.
 */
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { signAttached } from '../../tls/cms-sign.js';
import { signerRoleProblem } from '../../tls/cms-verify.js';

export interface AuditSealKey {
  certPem: string;
  keyPem: string;
  /** The files the pair was read from: when given, a changed file is read again before the next seal. */
  certFile?: string;
  keyFile?: string;
}

/** What the source did when the files changed: `reloaded` (sealing with the new certificate, its SHA-256 fingerprint) or `kept` (why not). */
export type SealKeyEvent = { reloaded: string } | { kept: string };

export interface SealKeySource {
  /** The pair to seal with now. */
  current(): AuditSealKey;
}

/** A file's identity and version as stat sees it; null when it cannot be read. */
function version(path: string): string | null {
  try {
    const s = statSync(path, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return null;
  }
}

/** Why `certPem` and `keyPem` cannot seal, or null when they can. */
export function sealPairProblem(certPem: string, keyPem: string): string | null {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    return 'the certificate file holds no readable certificate';
  }
  const role = signerRoleProblem(cert, 'audit-seal');
  if (role) return role;
  try {
    const fromKey = createPublicKey(createPrivateKey(keyPem)).export({ type: 'spki', format: 'der' });
    if (!fromKey.equals(cert.publicKey.export({ type: 'spki', format: 'der' }))) return 'the key file does not hold the certificate\'s key';
    signAttached(Buffer.from('probe'), certPem, keyPem);
  } catch {
    return 'the key file holds no key that signs';
  }
  return null;
}

export function sealKeySource(initial: AuditSealKey, onEvent: (event: SealKeyEvent) => void = () => {}): SealKeySource {
  const { certFile, keyFile } = initial;
  if (certFile === undefined || keyFile === undefined) return { current: () => initial };
  let key = initial;
  let seen = `${version(certFile)}|${version(keyFile)}`;
  /** The last reason a changed pair was not taken, reported once until it changes. */
  let lastKept: string | null = null;
  return {
    current() {
      const now = `${version(certFile)}|${version(keyFile)}`;
      if (now === seen) return key;
      let certPem: string;
      let keyPem: string;
      try {
        certPem = readFileSync(certFile, 'utf8');
        keyPem = readFileSync(keyFile, 'utf8');
      } catch (err) {
        return keep(`cannot read the seal files (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      if (certPem === key.certPem && keyPem === key.keyPem) {
        seen = now;
        return key;
      }
      const problem = sealPairProblem(certPem, keyPem);
      if (problem) return keep(problem);
      key = { certPem, keyPem, certFile, keyFile };
      seen = now;
      lastKept = null;
      onEvent({ reloaded: new X509Certificate(certPem).fingerprint256 });
      return key;
    },
  };

  /** The files changed into a pair that cannot seal (yet): the one in use stays, and they are looked at again next time. */
  function keep(why: string): AuditSealKey {
    if (why !== lastKept) onEvent({ kept: why });
    lastKept = why;
    return key;
  }
}

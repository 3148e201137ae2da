/**
 * Writes the install directory (src/install-dir/layout.ts). Each file is written atomically and
 * only when its content changes, so a second identical install changes nothing.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { formatEnvFile, readEnvFile } from '../util/env-file.js';
import { writeSecretFile } from '../util/atomic-write.js';
import type { InstallConfig } from '../install-dir/install-config.js';
import type { InstallPaths } from '../install-dir/layout.js';
import type { TlsMaterial } from './tls.js';
import type { IdentifierChoice } from './options.js';
import { ANY_IDENTIFIER_SYSTEM } from '../install-dir/api-settings.js';
import { writeIfChanged, type FileChange } from '../install-dir/write-if-changed.js';
import { profileOf } from '../runtime/profiles.js';

/**
 * hospital-api.env: the settings install manages (as the runtime's profile
 * gives them), plus whatever the hospital already put there (FHIR_API_KEY from
 * `consumer create`, a hand-filled PLATFORM_API_URL). PLATFORM_IDENTIFIER_SYSTEM
 * (or PLATFORM_ANY_IDENTIFIER_SYSTEM) is written when install is given one.
 */
export function renderApiEnv(paths: InstallPaths, config: InstallConfig, identifier: IdentifierChoice | null = null): string {
  const existing = readEnvFile(paths.apiEnv);
  const managed: Record<string, string> = { ...profileOf(config.runtime).apiEnv(paths, config) };
  const platform = config.platformApiUrl ?? existing.PLATFORM_API_URL;
  if (platform) managed.PLATFORM_API_URL = platform;
  // The patient match: the platform's identifier system, or the explicit choice of any; one replaces the other.
  const dropped = new Set<string>();
  // No audit-seal pair: no seal settings either (an older install named the record signer's key there, issue 46).
  if (!('AUDIT_SEAL_CERT_FILE' in managed)) for (const k of ['AUDIT_SEAL_CERT_FILE', 'AUDIT_SEAL_KEY_FILE']) dropped.add(k);
  if (identifier && 'system' in identifier) {
    managed.PLATFORM_IDENTIFIER_SYSTEM = identifier.system;
    dropped.add(ANY_IDENTIFIER_SYSTEM);
  } else if (identifier) {
    managed[ANY_IDENTIFIER_SYSTEM] = 'true';
    dropped.add('PLATFORM_IDENTIFIER_SYSTEM');
  }
  // managed keys first, then the hospital's own, so the order is stable across reruns
  const values: Record<string, string> = { ...managed };
  for (const [k, v] of Object.entries(existing)) if (!(k in managed) && !dropped.has(k)) values[k] = v;
  const notes = [
    'Hospital API settings, written by `hospital-api install` (mode 0600: it holds FHIR_API_KEY).',
    'FHIR_API_KEY is added by `hospital-api consumer create <name> --write-env`.',
  ];
  if (!platform) notes.push('PLATFORM_API_URL is not set yet: add PLATFORM_API_URL="https://..." (the platform API base).');
  if (!values.PLATFORM_IDENTIFIER_SYSTEM && values[ANY_IDENTIFIER_SYSTEM] !== 'true') {
    notes.push("PLATFORM_IDENTIFIER_SYSTEM is not set yet: rerun `hospital-api install --identifier-system <the platform's identifier system URI>`.");
  }
  return formatEnvFile(values, notes.join('\n'));
}

/** Everything install writes, before the runtime starts. */
export function writeInstallFiles(paths: InstallPaths, config: InstallConfig, tls: TlsMaterial, identifier: IdentifierChoice | null = null): FileChange[] {
  mkdirSync(paths.root, { recursive: true });
  for (const d of profileOf(config.runtime).privateFolders(paths)) {
    mkdirSync(d, { recursive: true, mode: 0o700 });
    chmodSync(d, 0o700);
  }
  mkdirSync(paths.logs, { recursive: true });
  mkdirSync(paths.reports, { recursive: true });
  const changes: FileChange[] = [
    writeIfChanged(paths.caCert, tls.caPem),
    writeIfChanged(paths.gatewayCert, tls.gateway.certPem),
    writeIfChanged(paths.gatewayKey, tls.gateway.keyPem, true),
    writeIfChanged(paths.signerCert, tls.signer.certPem),
    writeIfChanged(paths.signerKey, tls.signer.keyPem, true),
  ];
  // the audit seal (issue 46): none when a hospital CA's key was not given (no seals); one kept from before stays
  if (tls.auditSeal) changes.push(writeIfChanged(paths.auditSealCert, tls.auditSeal.certPem), writeIfChanged(paths.auditSealKey, tls.auditSeal.keyPem, true));
  else {
    // prepareTls kept none: one on disk no longer chains to the CA, and would only sign foreign seals
    for (const f of [paths.auditSealCert, paths.auditSealKey]) {
      if (!existsSync(f)) continue;
      rmSync(f);
      changes.push({ path: f, change: 'updated' });
    }
  }
  if (tls.caKeyPem) changes.push(writeIfChanged(paths.caKey, tls.caKeyPem, true));
  else if (!tls.caGenerated && existsSync(paths.caKey)) {
    // the hospital now brings its own CA: a key left from a generated one would mislead a rerun
    rmSync(paths.caKey);
    changes.push({ path: paths.caKey, change: 'updated' });
  }
  for (const [name, value] of Object.entries(profileOf(config.runtime).secrets(paths))) {
    changes.push(writeIfChanged(join(paths.secrets, name), value, true));
  }
  changes.push(writeIfChanged(paths.apiEnv, renderApiEnv(paths, config, identifier), true));
  changes.push(writeIfChanged(paths.installJson, JSON.stringify(config, null, 2) + '\n', true));
  return changes;
}

/** Sets some values in an env file, keeping its other values and its comment header (0600). */
export function updateEnvValues(path: string, updates: Record<string, string>): void {
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const header: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('# ')) break;
    header.push(line.slice(2));
  }
  const values = { ...readEnvFile(path), ...updates };
  writeSecretFile(path, formatEnvFile(values, header.length ? header.join('\n') : undefined));
}

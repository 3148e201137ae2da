/**
 * Writes the install directory (src/install-dir/layout.ts). Each file is written atomically and
 * only when its content changes, so a second identical install changes nothing.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { formatEnvFile, readEnvFile } from '../util/env-file.js';
import { writeSecretFile } from '../util/atomic-write.js';
import { endpoints, type InstallConfig } from '../install-dir/install-config.js';
import type { InstallPaths } from '../install-dir/layout.js';
import type { TlsMaterial } from './tls.js';
import { writeIfChanged, type FileChange } from '../install-dir/write-if-changed.js';

/** Paths the docker containers see (templates/compose.yaml mounts them there). */
export const CONTAINER_PATHS = {
  ca: '/run/hospital-api/tls/ca.pem',
  auditLog: '/var/log/hospital-api/audit.log',
} as const;

/**
 * hospital-api.env: the settings install manages, plus whatever the hospital
 * already put there (FHIR_API_KEY from `consumer create`, a hand-filled
 * PLATFORM_API_URL). Docker's API container reaches Kong by its service name.
 */
export function renderApiEnv(paths: InstallPaths, config: InstallConfig): string {
  const existing = readEnvFile(paths.apiEnv);
  const docker = config.runtime === 'docker';
  const managed: Record<string, string> = {
    FHIR_BASE_URL: docker ? 'https://kong:8443/fhir-api-key-auth' : endpoints(config).keyAuthBase,
    FHIR_CA_FILE: docker ? CONTAINER_PATHS.ca : paths.caCert,
    AUDIT_LOG: docker ? CONTAINER_PATHS.auditLog : join(paths.logs, 'audit.log'),
  };
  const platform = config.platformApiUrl ?? existing.PLATFORM_API_URL;
  if (platform) managed.PLATFORM_API_URL = platform;
  // managed keys first, then the hospital's own, so the order is stable across reruns
  const values: Record<string, string> = { ...managed };
  for (const [k, v] of Object.entries(existing)) if (!(k in managed)) values[k] = v;
  const notes = [
    'Hospital API settings, written by `hospital-api install` (mode 0600: it holds FHIR_API_KEY).',
    'FHIR_API_KEY is added by `hospital-api consumer create <name> --write-env`.',
  ];
  if (!platform) notes.push('PLATFORM_API_URL is not set yet: add PLATFORM_API_URL="https://..." (the platform API base).');
  return formatEnvFile(values, notes.join('\n'));
}

function password(): string {
  return randomBytes(24).toString('base64url');
}

/** Docker: database passwords, generated once per install (no default password anywhere). */
function dockerSecrets(paths: InstallPaths): Record<string, string> {
  const keep = (name: string): string => {
    const p = join(paths.secrets, name);
    return existsSync(p) ? readFileSync(p, 'utf8').trim() : password();
  };
  const kong = keep('kong-pg-password');
  const hapi = keep('hapi-pg-password');
  return {
    'kong-pg-password': kong + '\n',
    'hapi-pg-password': hapi + '\n',
    // Kong and HAPI read these passwords from files (KONG_PG_PASSWORD_FILE, a Spring
    // configtree) that the docker runtime copies under <dir>/docker/ before each start.
  };
}

/** Everything install writes, before the runtime starts. */
export function writeInstallFiles(paths: InstallPaths, config: InstallConfig, tls: TlsMaterial): FileChange[] {
  mkdirSync(paths.root, { recursive: true });
  // Native: the install directory and its logs are private to the service's user (issue #12).
  const privateDirs = config.runtime === 'native' ? [paths.secrets, paths.tls, paths.root, paths.logs] : [paths.secrets, paths.tls];
  for (const d of privateDirs) {
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
  if (tls.caKeyPem) changes.push(writeIfChanged(paths.caKey, tls.caKeyPem, true));
  else if (!tls.caGenerated && existsSync(paths.caKey)) {
    // the hospital now brings its own CA: a key left from a generated one would mislead a rerun
    rmSync(paths.caKey);
    changes.push({ path: paths.caKey, change: 'updated' });
  }
  if (config.runtime === 'docker') {
    for (const [name, value] of Object.entries(dockerSecrets(paths))) {
      changes.push(writeIfChanged(join(paths.secrets, name), value, true));
    }
  }
  changes.push(writeIfChanged(paths.apiEnv, renderApiEnv(paths, config), true));
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

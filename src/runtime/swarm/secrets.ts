/**
 * The Swarm secrets of a stack: what each holds, read from the install
 * directory, and the name each gets. A Swarm secret cannot be changed
 * (Docker docs, "Manage sensitive data with Docker secrets": rotate by adding
 * a new one), so the name carries a digest of the content: a new password,
 * key or settings file is a new secret, and redeploying the stack rolls the
 * services that read it. Nothing here logs or returns a content except to the
 * caller that writes the stack's copies.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { DOOR_TOKEN_FILE } from '../container/door-token.js';
import { databaseEndpoint } from './databases.js';
import { hasAuditSeal } from '../../install-dir/audit-seal-files.js';

/** The stack's secrets by their key in templates/stack.yaml (also the copy's file name under <dir>/swarm/secrets/). */
export const SECRET_KEYS = [
  'kong-pg-password', 'hapi-pg-password', 'gateway.pem', 'gateway.key', 'hospital-api.env', 'ca.pem', 'door-token', 'pgpass', 'database-ca.pem',
  'audit-seal.pem', 'audit-seal.key',
] as const;

/** Where the tasks that reach a database read the CA it is verified against (templates/stack.yaml). */
export const DATABASE_CA_PATH = '/run/secrets/database-ca.pem';

/** The database CA secret of a stack whose databases are all its own: a secret cannot be empty (Swarm refuses it). */
const NO_DATABASE_CA = '# no database outside the swarm: no CA to verify one against\n';

/**
 * The audit-seal secrets of an install without the pair (a hospital CA whose key install was not given):
 * the API's settings name no seal then, and a secret cannot be empty.
 */
const NO_AUDIT_SEAL = '# no audit-seal key configured: the audit log is not sealed\n';

export type SecretKey = (typeof SECRET_KEYS)[number];

export type SecretPayloads = Readonly<Record<SecretKey, string>>;

/** `<stack>_<key>-<first 8 hex of sha256(content)>`: 64 characters at most, as Swarm names must be. */
export function secretName(stack: string, key: SecretKey, content: string): string {
  return `${stack}_${key}-${createHash('sha256').update(content).digest('hex').slice(0, 8)}`;
}

/** A .pgpass field: `\` and `:` escaped (PostgreSQL docs, "The Password File"). */
function pgpassField(value: string): string {
  return value.replace(/[\\:]/g, (c) => `\\${c}`);
}

/** One line per database for the ops task's libpq (hostname:port:database:username:password). */
export function pgpass(config: InstallConfig, passwords: { kong: string; hapi: string }): string {
  const lines = (['kong', 'fhir'] as const).map((which) => {
    const db = databaseEndpoint(config, which);
    const password = which === 'kong' ? passwords.kong : passwords.hapi;
    return [db.host, db.port, db.database, db.user, password].map(pgpassField).join(':');
  });
  return lines.join('\n') + '\n';
}

function read(path: string): string {
  return existsSync(path) ? readFileSync(path, 'utf8') : '';
}

/**
 * What each secret holds, from the install directory as it is now. A file install has not
 * written yet reads as empty: the runtime renders the stack again, from the copies it writes,
 * before each deploy.
 */
export function secretPayloads(dir: string, config: InstallConfig): SecretPayloads {
  const p = installPaths(dir);
  const kong = read(join(p.secrets, 'kong-pg-password'));
  const hapi = read(join(p.secrets, 'hapi-pg-password'));
  return {
    'kong-pg-password': kong,
    'hapi-pg-password': hapi,
    'gateway.pem': read(p.gatewayCert),
    'gateway.key': read(p.gatewayKey),
    // install writes it with the container paths the profile's apiEnv gives
    'hospital-api.env': read(p.apiEnv),
    'ca.pem': read(p.caCert),
    'door-token': read(join(p.secrets, DOOR_TOKEN_FILE)),
    pgpass: pgpass(config, { kong: kong.trim(), hapi: hapi.trim() }),
    'database-ca.pem': config.swarm?.databaseCa ?? NO_DATABASE_CA,
    // the audit log's seal signer (issue 46): the install's audit-seal pair, read by the API tasks only;
    // never the record signer's key, which would let a compromised API sign an ACCEPTED record
    'audit-seal.pem': hasAuditSeal(p) ? read(p.auditSealCert) : NO_AUDIT_SEAL,
    'audit-seal.key': hasAuditSeal(p) ? read(p.auditSealKey) : NO_AUDIT_SEAL,
  };
}

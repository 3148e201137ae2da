/**
 * The files the containers read, under <install dir>/docker/ (mode 0700, so no
 * other host user reaches anything below it). Rewritten from the install's own
 * files before every start and restart, so a rotated CA or a new FHIR_API_KEY
 * takes effect with the container that reads it.
 *
 *   docker/.env                      COMPOSE_PROJECT_NAME, so `docker compose ps` in docker/ names the project
 *   docker/secrets/kong-pg-password  for KONG_PG_PASSWORD_FILE; 0644: the kong user's uid is not fixed
 *                                    (Kong/kong build/package/scripts/postinstall.sh: useradd -g kong kong)
 *   docker/secrets/gateway.pem|key   KONG_SSL_CERT / KONG_SSL_CERT_KEY (paths), same reason
 *   docker/hapi-config/spring.datasource.password   Spring configtree for HAPI (uid 65532, distroless nonroot)
 *   docker/api/hospital-api.env      the API's settings with container paths; owned by the API's uid, 0600
 *   docker/api/tls/ca.pem            the CA the gateway certificate is checked against (FHIR_CA_FILE)
 *   docker/api/tls/platform-ca.pem   PLATFORM_CA_FILE's certificates, when the hospital set one
 *   docker/api-logs/                 the API's audit log, writable by the API's uid
 *   docker/api-status/               where the API answers a key reload (api-reload.json), writable by its uid
 */
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { formatEnvFile, readEnvFile } from '../../util/env-file.js';
import { writeFileAtomic, writeSecretFile } from '../../util/atomic-write.js';
import { installPaths } from '../layout.js';
import { apiUser, projectName } from './render.js';

/** Where the API container sees its files (templates/compose.yaml mounts docker/api there). */
export const API_MOUNT = '/run/hospital-api';
export const API_CONTAINER_PATHS = Object.freeze({
  env: `${API_MOUNT}/hospital-api.env`,
  ca: `${API_MOUNT}/tls/ca.pem`,
  platformCa: `${API_MOUNT}/tls/platform-ca.pem`,
  auditLog: '/var/log/hospital-api/audit.log',
  /** serve --reload-status: the API's answer to SIGHUP (src/api/key-reload.ts), in docker/api-status/ on the host. */
  reloadStatus: '/run/hospital-api-status/api-reload.json',
});

/** The host side of API_CONTAINER_PATHS.reloadStatus. */
export function apiReloadStatusFile(dir: string): string {
  return join(installPaths(dir).docker, 'api-status', 'api-reload.json');
}

function dirFor(path: string, mode: number, owner?: { uid: number; gid: number }): void {
  mkdirSync(path, { recursive: true, mode });
  chmodSync(path, mode);
  if (owner && process.getuid?.() === 0) chownSync(path, owner.uid, owner.gid);
}

function readTrimmed(path: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as NodeJS.ErrnoException).code ?? String(err) }, { cause: err });
  }
}

/** Writes (or refreshes) every file the containers read. */
export function writeContainerFiles(dir: string): void {
  const p = installPaths(dir);
  const docker = p.docker;
  const user = apiUser();
  dirFor(docker, 0o700);
  writeFileAtomic(join(docker, '.env'), `COMPOSE_PROJECT_NAME=${projectName(dir)}\n`);

  // database passwords, readable by whatever uid the kong and hapi images run as
  dirFor(join(docker, 'secrets'), 0o755);
  writeFileAtomic(join(docker, 'secrets', 'kong-pg-password'), readTrimmed(join(p.secrets, 'kong-pg-password')) + '\n');
  chmodSync(join(docker, 'secrets', 'kong-pg-password'), 0o644);
  for (const [name, from] of [['gateway.pem', p.gatewayCert], ['gateway.key', p.gatewayKey]] as const) {
    copyFileSync(from, join(docker, 'secrets', name));
    chmodSync(join(docker, 'secrets', name), 0o644);
  }
  dirFor(join(docker, 'hapi-config'), 0o755);
  writeFileAtomic(join(docker, 'hapi-config', 'spring.datasource.password'), readTrimmed(join(p.secrets, 'hapi-pg-password')));
  chmodSync(join(docker, 'hapi-config', 'spring.datasource.password'), 0o644);

  // the API: its settings with container paths, and the certificates they name
  const api = join(docker, 'api');
  dirFor(api, 0o700, user);
  dirFor(join(api, 'tls'), 0o700, user);
  const env = readEnvFile(p.apiEnv);
  copyFileSync(p.caCert, join(api, 'tls', 'ca.pem'));
  const values: Record<string, string> = { ...env, FHIR_CA_FILE: API_CONTAINER_PATHS.ca, AUDIT_LOG: API_CONTAINER_PATHS.auditLog };
  const platformCa = join(api, 'tls', 'platform-ca.pem');
  if (env.PLATFORM_CA_FILE) {
    // a host path (relative ones to the install directory): copied in, named by its container path
    const source = isAbsolute(env.PLATFORM_CA_FILE) ? env.PLATFORM_CA_FILE : resolve(p.root, env.PLATFORM_CA_FILE);
    if (source !== API_CONTAINER_PATHS.platformCa) {
      if (!existsSync(source)) throw new HospitalApiError('ERR_FILE_READ', { path: source, detail: 'PLATFORM_CA_FILE does not exist' });
      copyFileSync(source, platformCa);
    }
    values.PLATFORM_CA_FILE = API_CONTAINER_PATHS.platformCa;
  } else {
    rmSync(platformCa, { force: true });
  }
  for (const f of [join(api, 'tls', 'ca.pem'), ...(existsSync(platformCa) ? [platformCa] : [])]) {
    chmodSync(f, 0o644);
    if (process.getuid?.() === 0) chownSync(f, user.uid, user.gid);
  }
  const envPath = join(api, 'hospital-api.env');
  writeSecretFile(envPath, formatEnvFile(values, 'Written by the docker runtime from ../hospital-api.env before each start: edit that file, not this one.'));
  if (process.getuid?.() === 0) chownSync(envPath, user.uid, user.gid);
  for (const name of ['api-logs', 'api-status']) {
    dirFor(join(docker, name), 0o700, user);
    // files put back by a restore run as root belong to root: the API must still append its audit log
    if (process.getuid?.() === 0) for (const f of readdirSync(join(docker, name))) chownSync(join(docker, name, f), user.uid, user.gid);
  }
}

/**
 * The files the containers read, under <install dir>/docker/ (mode 0700, so no
 * other host user reaches anything below it). Rewritten from the install's own
 * files before every start and restart, so a rotated CA or a new FHIR_API_KEY
 * takes effect with the container that reads it.
 *
 *   docker/.env                      COMPOSE_PROJECT_NAME, so `docker compose ps` in docker/ names the project
 *   docker/image-users.json          the uid:gid each image runs as, by image id (resolved once per image)
 *   docker/secrets/                  0700, owned by the kong image's user:
 *     kong-pg-password               for KONG_PG_PASSWORD_FILE, 0600
 *     gateway.pem|key                KONG_SSL_CERT / KONG_SSL_CERT_KEY (paths), 0600
 *   docker/hapi-config/              0700, owned by the hapi image's user:
 *     spring.datasource.password     Spring configtree for HAPI, 0600
 *   docker/fhir-door/               0700, owned by the API's uid (the door runs as it, from the same image):
 *     token                          the FHIR door's token (door-token.ts), 0600
 *   docker/api/hospital-api.env      the API's settings with container paths; owned by the API's uid, 0600
 *   docker/api/tls/ca.pem            the CA the gateway certificate is checked against (FHIR_CA_FILE)
 *   docker/api/tls/platform-ca.pem   PLATFORM_CA_FILE's certificates, when the hospital set one
 *   docker/api-logs/                 the API's audit log, writable by the API's uid
 *   docker/api-status/               where the API answers a key reload (api-reload.json), writable by its uid
 *   docker/platform/demo/tokens.json DEMO ONLY: the platform stand-in's copy of demo/tokens.json, 0600, the API's uid
 *
 * Who reads the database passwords: the Postgres images read their
 * POSTGRES_PASSWORD_FILE from ../secrets as root before dropping privileges
 * (docker-library/postgres docker-entrypoint.sh, `file_env` runs before the
 * `gosu postgres` re-exec), so those stay the install's own 0600 files. Kong
 * reads KONG_PG_PASSWORD_FILE in its entrypoint as the image's `kong` user
 * (Kong/docker-kong ubuntu/Dockerfile: `USER kong` before
 * ENTRYPOINT ["/docker-entrypoint.sh"], whose `file_env` does `$(< file)`),
 * and nginx reads KONG_SSL_CERT_KEY as that user too. That user's uid is not
 * fixed: kong.deb's postinstall creates it with a plain `useradd -g kong kong`
 * (Kong/kong build/package/postinstall.sh), so it is the first free uid of the
 * base image. HAPI runs as 65532:65532 (hapifhir/hapi-fhir-jpaserver-starter
 * Dockerfile, `USER 65532:65532`, distroless nonroot). So each image's user is
 * read from the image (its numeric USER, else `id` run as that user, once per
 * image id) and each copy is made 0600 and owned by it. When that is not
 * possible (a non-root installer whose uid differs, or an image whose user
 * cannot be resolved), the copy stays 0644 inside the 0700 docker/ folder and
 * `verify`'s file-permissions check names it.
 */
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { formatEnvFile, readEnvFile } from '../../util/env-file.js';
import { writeFileAtomic, writeSecretFile } from '../../util/atomic-write.js';
import { installPaths, type InstallPaths } from '../../install-dir/layout.js';
import type { DockerCli } from '../container/compose.js';
import { apiUser } from './render.js';
import { projectName } from '../container/project.js';
import { API_CONTAINER_PATHS } from './container-paths.js';
import { ensureDoorToken } from '../container/door-token.js';
import { hasAuditSeal } from '../../install-dir/audit-seal-files.js';
import { metricsTokenFileText, metricsTokenPath } from '../../install-dir/metrics-token.js';

/** The metrics token's file content, kept or made (and then written to <dir>/secrets/). */
function ensureMetricsToken(p: InstallPaths): string {
  const text = metricsTokenFileText(p);
  if (!existsSync(metricsTokenPath(p))) writeSecretFile(metricsTokenPath(p), text);
  return text;
}

/** A uid:gid a container's processes run as. */
export interface ImageUser {
  uid: number;
  gid: number;
}

/** The users of the images that read the copied secrets; null when not resolved. */
export interface SecretReaders {
  kong: ImageUser | null;
  hapi: ImageUser | null;
}

const IMAGE_USERS_FILE = 'image-users.json';

/** `id` output ("uid=999(kong) gid=999(kong) groups=…") → uid:gid. */
export function parseId(text: string): ImageUser | null {
  const m = /uid=(\d+)\S*\s+gid=(\d+)/.exec(text);
  return m ? { uid: Number(m[1]), gid: Number(m[2]) } : null;
}

/**
 * An image's USER as a uid:gid without running it, when it can be: '' and
 * root are 0; "65532" and "65532:65532" are numeric. A user name needs the
 * image's /etc/passwd: undefined then.
 */
export function numericUser(user: string): ImageUser | undefined {
  const [u = '', g] = user.split(':');
  if (u === '' || u === 'root' || u === '0') return { uid: 0, gid: g && /^\d+$/.test(g) ? Number(g) : 0 };
  if (!/^\d+$/.test(u)) return undefined;
  if (g === undefined) return { uid: Number(u), gid: Number(u) };
  return /^\d+$/.test(g) ? { uid: Number(u), gid: Number(g) } : undefined;
}

function readCache(path: string): Record<string, ImageUser> {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    const out: Record<string, ImageUser> = Object.create(null) as Record<string, ImageUser>;
    for (const [id, v] of Object.entries(parsed as Record<string, unknown>)) {
      const u = v as Partial<ImageUser> | null;
      if (/^sha256:[0-9a-f]{64}$/.test(id) && u && Number.isInteger(u.uid) && Number.isInteger(u.gid)) out[id] = { uid: u.uid!, gid: u.gid! };
    }
    return out;
  } catch {
    return {}; // absent or damaged: resolved again
  }
}

/**
 * The uid:gid each image runs as: its numeric USER, else `id` run once as that
 * user (`docker run --rm --entrypoint id`), remembered by image id in
 * docker/image-users.json. null when the image is absent or has no `id`.
 */
export async function resolveImageUsers(cli: DockerCli, dir: string, images: { kong: string; hapi: string }): Promise<SecretReaders> {
  const cachePath = join(installPaths(dir).docker, IMAGE_USERS_FILE);
  const cache = readCache(cachePath);
  let changed = false;
  const resolveOne = async (ref: string): Promise<ImageUser | null> => {
    const inspect = await cli.run(['image', 'inspect', '--format', '{{.Id}} {{.Config.User}}', ref], { allowFail: true });
    if (inspect.exitCode !== 0) return null;
    const line = inspect.stdout.trim();
    const cut = line.indexOf(' ');
    const id = cut < 0 ? line : line.slice(0, cut);
    const user = cut < 0 ? '' : line.slice(cut + 1).trim();
    const numeric = numericUser(user);
    if (numeric) return numeric;
    if (cache[id]) return cache[id]!;
    const ran = await cli.run(['run', '--rm', '--network', 'none', '--entrypoint', 'id', id], { allowFail: true, timeoutMs: 300_000 });
    const found = ran.exitCode === 0 ? parseId(ran.stdout) : null;
    if (found) {
      cache[id] = found;
      changed = true;
    }
    return found;
  };
  const readers = { kong: await resolveOne(images.kong), hapi: await resolveOne(images.hapi) };
  if (changed) {
    dirFor(installPaths(dir).docker, 0o700);
    writeSecretFile(cachePath, JSON.stringify(cache, null, 2) + '\n');
  }
  return readers;
}

/**
 * How a copy read by `reader` can be private: owned by it with 0600 (folder
 * 0700). Root can give it to any uid; another installer only when the reader
 * is itself or the container's root (which reads any file). Otherwise null.
 */
function privateFor(reader: ImageUser | null): { owner?: ImageUser } | null {
  if (!reader) return null;
  const me = process.getuid?.();
  if (me === undefined) return null;
  if (me === 0) return { owner: reader };
  if (reader.uid === me || reader.uid === 0) return {};
  return null;
}

/** Writes `files` into `folder` readable by `reader` only, or 0644 in 0755 when that cannot be done. */
function writeReadable(folder: string, reader: ImageUser | null, files: Array<{ name: string; data: string | Buffer }>): void {
  const priv = privateFor(reader);
  dirFor(folder, priv ? 0o700 : 0o755, priv?.owner);
  for (const f of files) {
    const path = join(folder, f.name);
    writeFileAtomic(path, f.data, { mode: priv ? 0o600 : 0o644 });
    if (priv?.owner) chownSync(path, priv.owner.uid, priv.owner.gid);
  }
}

export { API_CONTAINER_PATHS, API_MOUNT } from './container-paths.js';

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

/** Writes (or refreshes) every file the containers read; `readers` from resolveImageUsers. */
export function writeContainerFiles(dir: string, readers: SecretReaders = { kong: null, hapi: null }): void {
  const p = installPaths(dir);
  const docker = p.docker;
  const user = apiUser();
  dirFor(docker, 0o700);
  writeFileAtomic(join(docker, '.env'), `COMPOSE_PROJECT_NAME=${projectName(dir)}\n`);

  // Kong's database password and the gateway certificate, private to the kong image's user
  writeReadable(join(docker, 'secrets'), readers.kong, [
    { name: 'kong-pg-password', data: readTrimmed(join(p.secrets, 'kong-pg-password')) + '\n' },
    { name: 'gateway.pem', data: readFileSync(p.gatewayCert) },
    { name: 'gateway.key', data: readFileSync(p.gatewayKey) },
  ]);
  // HAPI's, private to the hapi image's user
  writeReadable(join(docker, 'hapi-config'), readers.hapi, [{ name: 'spring.datasource.password', data: readTrimmed(join(p.secrets, 'hapi-pg-password')) }]);

  // the FHIR door's token, private to the uid the door runs as (the API's); made here for an install from before the door
  writeReadable(join(docker, 'fhir-door'), user, [{ name: 'token', data: ensureDoorToken(p) + '\n' }]);

  // the API: its settings with container paths, and the certificates they name
  const api = join(docker, 'api');
  dirFor(api, 0o700, user);
  dirFor(join(api, 'tls'), 0o700, user);
  const env = readEnvFile(p.apiEnv);
  copyFileSync(p.caCert, join(api, 'tls', 'ca.pem'));
  const values: Record<string, string> = { ...env, FHIR_CA_FILE: API_CONTAINER_PATHS.ca, AUDIT_LOG: API_CONTAINER_PATHS.auditLog };
  // The audit log's seal signer (issue 46): the install's audit-seal pair, private to the API's uid like its
  // settings; never the record signer's key, which would let a compromised API sign an ACCEPTED record.
  const seal = { cert: join(api, 'tls', 'audit-seal.pem'), key: join(api, 'tls', 'audit-seal.key') };
  if (hasAuditSeal(p)) {
    copyFileSync(p.auditSealCert, seal.cert);
    writeSecretFile(seal.key, readFileSync(p.auditSealKey, 'utf8'));
    if (process.getuid?.() === 0) chownSync(seal.key, user.uid, user.gid);
    values.AUDIT_SEAL_CERT_FILE = API_CONTAINER_PATHS.sealCert;
    values.AUDIT_SEAL_KEY_FILE = API_CONTAINER_PATHS.sealKey;
  } else {
    for (const f of [seal.cert, seal.key]) rmSync(f, { force: true });
    delete values.AUDIT_SEAL_CERT_FILE;
    delete values.AUDIT_SEAL_KEY_FILE;
  }
  // the token the API's /metrics requires (issue 45), private to the API's uid; made here for an install from before it
  const metricsToken = ensureMetricsToken(p);
  const tokenCopy = join(api, 'metrics-token');
  writeSecretFile(tokenCopy, metricsToken);
  if (process.getuid?.() === 0) chownSync(tokenCopy, user.uid, user.gid);
  values.METRICS_TOKEN_FILE = API_CONTAINER_PATHS.metricsToken;
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
  for (const f of [join(api, 'tls', 'ca.pem'), ...(existsSync(platformCa) ? [platformCa] : []), ...(existsSync(seal.cert) ? [seal.cert] : [])]) {
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
  writeDemoPlatformFiles(p.demoTokens, join(docker, 'platform'), user);
  // the API's read-only view of the acceptance records (its gauges) and the acceptance service's writable
  // one: bind sources that must exist (the engine would make a missing one as root); and the folder the
  // acceptance relay's socket lives in, the installer's only, whom both acceptance services run as (issue 46)
  mkdirSync(p.reports, { recursive: true });
  dirFor(join(docker, 'acceptance-relay'), 0o700);
}

/**
 * DEMO ONLY: the platform stand-in's copy of the demo tokens (docker/platform/demo/tokens.json, 0600,
 * owned by the API's uid, which the stand-in runs as). Only a demo install has tokens; a production
 * install has no docker/platform folder.
 */
function writeDemoPlatformFiles(tokens: string, folder: string, user: ImageUser): void {
  if (!existsSync(tokens)) {
    rmSync(folder, { recursive: true, force: true });
    return;
  }
  writeReadable(folder, user, []);
  writeReadable(join(folder, 'demo'), user, [{ name: 'tokens.json', data: readFileSync(tokens) }]);
}

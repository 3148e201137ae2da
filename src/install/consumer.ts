/**
 * `consumer create`: the hospital's own step (spec §2.3, §5). Creates the
 * gateway consumer and its key-auth credential; the key is returned once for
 * printing and, with --write-env, stored as FHIR_API_KEY (0600) before the
 * Hospital API is restarted to read it.
 */
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { readFileSync } from 'node:fs';
import { keyFingerprint } from '../api/fhir/key-reload.js';
import { HospitalApiError } from '../errors/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { READY_CACHE_MS } from '../api/routes/health.js';
import { readInstallConfig, type InstallConfig } from '../install-dir/install-config.js';
import { installPaths } from '../install-dir/layout.js';
import { safeEqual } from '../util/constant-time.js';
import { readEnvFile } from '../util/env-file.js';
import { updateEnvValues } from './files.js';
import { probeKey, type KeyProbe } from '../runtime/key-probe.js';
import type { ApiKeyReload, Runtime } from '../runtime/types.js';
import { adminCall } from './provision.js';
import { withinPropagation } from '../runtime/propagation.js';
import { profileOf } from '../runtime/profiles.js';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 32 alphanumeric characters, as Kong generates them (kong/tools/rand.lua), without modulo bias. */
export function generateKey(length = 32): string {
  let out = '';
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < 248 && out.length < length) out += ALPHANUMERIC[b % 62];
    }
  }
  return out;
}

export interface ConsumerResult {
  username: string;
  consumerId: string;
  credentialId: string;
  key: string;
  envWritten: boolean;
  restarted: boolean;
}

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;

export async function createConsumer(
  runtime: Runtime,
  dir: string,
  options: { username: string; key?: string; writeEnv?: boolean },
  log: (text: string) => void,
): Promise<ConsumerResult> {
  const { username } = options;
  if (!USERNAME.test(username)) {
    throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: 'username', detail: 'letters, digits, . _ @ - (max 128)' });
  }
  if (options.key !== undefined && !/^[\x21-\x7e]{16,256}$/.test(options.key)) {
    throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--key', detail: 'at least 16 printable characters, no spaces' });
  }
  const admin = runtime.admin.bind(runtime);
  const path = `/consumers/${encodeURIComponent(username)}`;
  // All or nothing: a consumer this run creates is deleted again if its key
  // cannot be added. (The key is not looked up first: that would put it in an
  // admin URL, and so in the gateway's access log.)
  const before = await adminCall(admin, 'GET', path, undefined, [200, 404]);
  if (before.status === 200) {
    const existing = (await adminCall(admin, 'GET', `${path}/key-auth`)).body as { data?: unknown[] };
    if ((existing.data ?? []).length > 0) throw new HospitalApiError('ERR_INSTALL_CONSUMER_EXISTS', { username, dir: installPaths(dir).root });
  }
  // PUT by username: idempotent, so a rerun reuses a consumer left without a key.
  const consumer = (await adminCall(admin, 'PUT', path, {})).body as { id: string };
  const key = options.key ?? generateKey();
  let created;
  try {
    // A 409 body names the duplicate key (Kong's kong/db/errors.lua unique violation): never echo it into an error.
    created = await adminCall(admin, 'POST', `/consumers/${consumer.id}/key-auth`, { key }, [201, 409]);
    if (created.status === 409) throw new HospitalApiError('ERR_INSTALL_KEY_TAKEN');
  } catch (err) {
    if (before.status === 404) {
      await adminCall(admin, 'DELETE', `/consumers/${consumer.id}`, undefined, [204, 404]).catch((e: unknown) => {
        log(`consumer ${username}: could not remove it after the failure (${(e as Error).message}); delete it with the admin API`);
      });
    }
    throw err;
  }
  const cred = created.body as { id: string };
  log(`consumer ${username}: key-auth credential created`);
  let restarted = false;
  if (options.writeEnv) {
    const path = installPaths(dir).apiEnv;
    updateEnvValues(path, { FHIR_API_KEY: key });
    log(`FHIR_API_KEY written to ${path}; restarting the Hospital API`);
    await runtime.restart('api');
    restarted = true;
  }
  return { username, consumerId: consumer.id, credentialId: cred.id, key, envWritten: options.writeEnv === true, restarted };
}

interface Credential {
  id: string;
  key: string;
  created_at?: number;
}

export interface KeyInfo {
  id: string;
  createdAt: string | null;
  /** This is the key in hospital-api.env (FHIR_API_KEY). */
  inUse: boolean;
}

async function consumerAndKeys(runtime: Runtime, dir: string, username: string): Promise<{ id: string; creds: Credential[] }> {
  if (!USERNAME.test(username)) {
    throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: 'username', detail: 'letters, digits, . _ @ - (max 128)' });
  }
  const admin = runtime.admin.bind(runtime);
  const found = await adminCall(admin, 'GET', `/consumers/${encodeURIComponent(username)}`, undefined, [200, 404]);
  if (found.status === 404) throw new HospitalApiError('ERR_KEY_NO_CONSUMER', { username, dir: installPaths(dir).root });
  const id = (found.body as { id: string }).id;
  const creds: Credential[] = [];
  let path: string | null = `/consumers/${id}/key-auth?size=1000`;
  while (path) {
    const page = (await adminCall(admin, 'GET', path)).body as { data?: Credential[]; offset?: string | null };
    creds.push(...(page.data ?? []));
    path = page.offset ? `/consumers/${id}/key-auth?size=1000&offset=${encodeURIComponent(page.offset)}` : null;
  }
  return { id, creds };
}

function envKey(dir: string): string | null {
  return readEnvFile(installPaths(dir).apiEnv).FHIR_API_KEY || null;
}

function keyInfo(c: Credential, inUseKey: string | null): KeyInfo {
  return { id: c.id, createdAt: c.created_at ? new Date(c.created_at * 1000).toISOString() : null, inUse: inUseKey !== null && safeEqual(c.key, inUseKey) };
}

/** `consumer keys`: the consumer's key-auth credentials by id; never the keys themselves. */
export async function listKeys(runtime: Runtime, dir: string, username: string): Promise<KeyInfo[]> {
  const { creds } = await consumerAndKeys(runtime, dir, username);
  const inUse = envKey(dir);
  return creds.map((c) => keyInfo(c, inUse));
}

export interface RotateResult {
  username: string;
  /** The new key: printed once on stdout by the command, never logged. */
  key: string;
  credentialId: string;
  /** The credential revoked at the end, or null when the old key stays (no --write-env). */
  revokedCredentialId: string | null;
  envWritten: boolean;
  /** The fingerprint the Hospital API reported after switching (SHA-256 prefix, not the key). */
  apiKeyFingerprint: string | null;
}

/**
 * `consumer rotate-key`: add a second key, prove it through the gateway, switch
 * the Hospital API to it without a restart and confirm the API reached the
 * gateway with it, then revoke the old key and prove the old key is refused.
 * Both keys are valid throughout the switch, so no platform request fails.
 * Any failure before the revoke puts everything back (env file, the API's key)
 * and removes the new credential: the old key keeps working.
 */
export async function rotateKey(
  runtime: Runtime,
  dir: string,
  options: { username: string; writeEnv?: boolean },
  log: (text: string) => void,
): Promise<RotateResult> {
  const { username } = options;
  const config = readInstallConfig(dir);
  const admin = runtime.admin.bind(runtime);
  const { id: consumerId, creds } = await consumerAndKeys(runtime, dir, username);
  const oldKey = envKey(dir);
  const old = oldKey === null ? undefined : creds.find((c) => safeEqual(c.key, oldKey));
  if (options.writeEnv && !old) {
    throw new HospitalApiError('ERR_KEY_NOT_FOUND', { username, dir: installPaths(dir).root, what: "the Hospital API's FHIR_API_KEY (it belongs to another consumer, or none)" });
  }
  const fail = (step: string, detail: string, cause?: unknown): HospitalApiError =>
    new HospitalApiError('ERR_KEY_ROTATE_FAILED', { username, dir: installPaths(dir).root, step, detail }, cause === undefined ? {} : { cause });

  const key = generateKey();
  const created = await adminCall(admin, 'POST', `/consumers/${consumerId}/key-auth`, { key }, [201, 409]);
  if (created.status === 409) throw new HospitalApiError('ERR_INSTALL_KEY_TAKEN');
  const credentialId = (created.body as { id: string }).id;
  log(`consumer ${username}: second key-auth credential ${credentialId} added`);
  const removeNew = async (): Promise<void> => {
    await adminCall(admin, 'DELETE', `/consumers/${consumerId}/key-auth/${credentialId}`, undefined, [204, 404]).catch((e: unknown) =>
      log(`could not remove the new credential ${credentialId} (${(e as Error).message}); revoke it with \`consumer revoke-key ${username} ${credentialId}\``),
    );
  };

  let probe: KeyProbe;
  try {
    // a gateway on several hosts serves the new credential at each proxy's next database read (Runtime.gatewayPropagationMs)
    probe = (await withinPropagation({ runtime }, () => probeKey(dir, config, key), (p) => p.status === 200 && p.capability)).result;
  } catch (err) {
    await removeNew();
    throw fail('check the new key through the gateway', (err as Error).message, err);
  }
  if (probe.status !== 200 || !probe.capability) {
    await removeNew();
    throw fail('check the new key through the gateway', `GET /fhir-api-key-auth/metadata answered ${probe.status}`);
  }
  log('the new key works through the gateway (HTTPS, verified against the CA)');
  if (!options.writeEnv) {
    return { username, key, credentialId, revokedCredentialId: null, envWritten: false, apiKeyFingerprint: null };
  }

  const envPath = installPaths(dir).apiEnv;
  const expected = keyFingerprint(key);
  updateEnvValues(envPath, { FHIR_API_KEY: key });
  log(`FHIR_API_KEY replaced in ${envPath}; the Hospital API rereads it (no restart)`);
  let reload: ApiKeyReload;
  try {
    reload = await runtime.reloadApiKey();
    if (reload.keyFingerprint !== expected || reload.gateway !== 'ok') {
      throw new HospitalApiError('ERR_KEY_RELOAD_FAILED', {
        detail: reload.keyFingerprint !== expected ? `it still uses another key${reload.error ? ` (${reload.error})` : ''}` : `the gateway answered it with ${reload.gateway}`,
      });
    }
  } catch (err) {
    // Back to the old key everywhere; it was never revoked.
    updateEnvValues(envPath, { FHIR_API_KEY: oldKey as string });
    await runtime.reloadApiKey().catch(() => undefined);
    await removeNew();
    throw fail('switch the Hospital API', (err as Error).message, err);
  }
  log(`the Hospital API switched (key fingerprint ${reload.keyFingerprint}) and reached the gateway with it`);

  const oldCred = old as Credential;
  await adminCall(admin, 'DELETE', `/consumers/${consumerId}/key-auth/${oldCred.id}`, undefined, [204, 404]);
  // and forgets the revoked one at the same next read
  const after = (await withinPropagation({ runtime }, () => probeKey(dir, config, oldCred.key), (p) => p.status === 401)).result;
  if (after.status !== 401) throw fail('revoke the old key', `the old key still answers ${after.status} through the gateway`);
  log(`old credential ${oldCred.id} revoked; the gateway refuses the old key (401)`);
  const ready = await apiReadyForFhir(config);
  // past the revoke nothing goes back: the rotation happened, only its confirmation is missing
  if (ready !== 'ok') throw new HospitalApiError('ERR_KEY_ROTATED_UNCONFIRMED', { username, dir: installPaths(dir).root, credential: oldCred.id, detail: ready });
  log('the Hospital API reads FHIR through the gateway with the new key (/api/ready)');
  return { username, key, credentialId, revokedCredentialId: oldCred.id, envWritten: true, apiKeyFingerprint: reload.keyFingerprint };
}

/**
 * The Hospital API's own readiness (GET /api/ready checks the gateway with the
 * key it holds), read past its cache window. Only the FHIR half counts here.
 * A caller allow-list that excludes this host is not a failure of the rotation.
 */
async function apiReadyForFhir(config: InstallConfig): Promise<string> {
  await sleep(READY_CACHE_MS + 100);
  try {
    // where this host reaches the API: a site bound to its LAN address answers there only (issue 48)
    const address = profileOf(config.runtime).publishedAddress(config);
    const res = await request(`http://${isIP(address) === 6 ? `[${address}]` : address}:${config.ports.api}/api/ready`, { headersTimeout: 30_000, bodyTimeout: 30_000 });
    const text = await res.body.text();
    if (res.statusCode === 200 || res.statusCode === 403) return 'ok';
    const m = /fhir ([A-Za-z_]+)/.exec(text);
    return m?.[1] === 'ok' ? 'ok' : `GET /api/ready answered ${res.statusCode} (fhir ${m?.[1] ?? 'unknown'})`;
  } catch (err) {
    return `GET /api/ready failed: ${(err as Error).message}`;
  }
}

export interface RevokeResult {
  username: string;
  revokedCredentialId: string;
  /** 401 when the revoked key was probed through the gateway (only with --key-file). */
  probeStatus: number | null;
}

/** `consumer revoke-key`: delete one credential (by id, or by the leaked key in a file). Refuses the key the API uses. */
export async function revokeKey(
  runtime: Runtime,
  dir: string,
  options: { username: string; keyId?: string; keyFile?: string; force?: boolean },
  log: (text: string) => void,
): Promise<RevokeResult> {
  const { username } = options;
  if ((options.keyId === undefined) === (options.keyFile === undefined)) {
    throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: 'revoke-key', detail: 'give either a key id or --key-file' });
  }
  const { id: consumerId, creds } = await consumerAndKeys(runtime, dir, username);
  let leaked: string | null = null;
  if (options.keyFile !== undefined) {
    try {
      leaked = readFileSync(options.keyFile, 'utf8').trim();
    } catch (err) {
      throw new HospitalApiError('ERR_FILE_READ', { path: options.keyFile, detail: (err as NodeJS.ErrnoException).code ?? 'error' }, { cause: err });
    }
  }
  const cred = leaked !== null ? creds.find((c) => safeEqual(c.key, leaked)) : creds.find((c) => c.id === options.keyId);
  if (!cred) throw new HospitalApiError('ERR_KEY_NOT_FOUND', { username, dir: installPaths(dir).root, what: leaked !== null ? `the key in ${options.keyFile}` : `id ${options.keyId}` });
  const inUse = envKey(dir);
  if (inUse !== null && safeEqual(cred.key, inUse) && !options.force) throw new HospitalApiError('ERR_KEY_IN_USE', { username, dir: installPaths(dir).root });
  await adminCall(runtime.admin.bind(runtime), 'DELETE', `/consumers/${consumerId}/key-auth/${cred.id}`, undefined, [204, 404]);
  log(`consumer ${username}: credential ${cred.id} revoked`);
  let probeStatus: number | null = null;
  if (leaked !== null) {
    const config = readInstallConfig(dir);
    // every proxy forgets it at its next database read (Runtime.gatewayPropagationMs)
    probeStatus = (await withinPropagation({ runtime }, () => probeKey(dir, config, leaked), (p) => p.status === 401)).result.status;
    if (probeStatus !== 401) throw new HospitalApiError('ERR_KEY_ROTATE_FAILED', { username, dir: installPaths(dir).root, step: 'revoke', detail: `the revoked key still answers ${probeStatus}` });
    log('the gateway refuses the revoked key (401)');
  }
  return { username, revokedCredentialId: cred.id, probeStatus };
}

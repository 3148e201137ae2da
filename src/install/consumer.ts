/**
 * `consumer create`: the hospital's own step (spec §2.3, §5). Creates the
 * gateway consumer and its key-auth credential; the key is returned once for
 * printing and, with --write-env, stored as FHIR_API_KEY (0600) before the
 * Hospital API is restarted to read it.
 */
import { randomBytes } from 'node:crypto';
import { HospitalApiError } from '../errors/index.js';
import { installPaths } from '../runtime/layout.js';
import { updateEnvValues } from './files.js';
import type { Runtime } from '../runtime/types.js';
import { adminCall } from './provision.js';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 32 alphanumeric characters, as Kong generates them (kong.md §1), without modulo bias. */
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
    if ((existing.data ?? []).length > 0) throw new HospitalApiError('ERR_INSTALL_CONSUMER_EXISTS', { username });
  }
  // PUT by username: idempotent, so a rerun reuses a consumer left without a key.
  const consumer = (await adminCall(admin, 'PUT', path, {})).body as { id: string };
  const key = options.key ?? generateKey();
  let created;
  try {
    // A 409 body names the duplicate key (kong.md §1): never echo it into an error.
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

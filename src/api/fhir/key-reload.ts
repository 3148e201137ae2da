/**
 * Key reload without a restart (`consumer rotate-key`): on SIGHUP the Hospital
 * API reads FHIR_API_KEY (and FHIR_CA_FILE) again from its settings, switches to it for every
 * later FHIR request (in-flight requests keep working: both keys are valid at
 * the gateway while the switch happens), checks the gateway accepts it, and
 * reports the outcome in a status file. The configuration is not edited: the
 * FHIR client swaps its immutable access (src/api/fhir/fhir-access.ts) for a new one.
 * No connection is closed, so the
 * platform sees no failed request. Only the key and the CA are reloaded; other settings
 * still need a restart. The status file carries a SHA-256 fingerprint of the
 * key (never the key) so the caller can tell which key the API now uses.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { isHospitalApiError } from '../../errors/index.js';
import { writeSecretFile } from '../../util/atomic-write.js';
import { loadConfig, type ConfigFlags } from '../server/config.js';
import { fhirAccessOf } from './fhir-access.js';
import type { RunningApi } from '../server/server.js';

export interface ReloadStatus {
  pid: number;
  at: string;
  /** First 16 hex digits of SHA-256 of the key now in use. */
  keyFingerprint: string;
  /** `ok` when GET metadata through the gateway with the new key answered a CapabilityStatement, else an error code. */
  gateway: string;
  /** Set when the settings could not be read: the old key stays in use. */
  error?: string;
  /** SHA-256 fingerprint of the first certificate of FHIR_CA_FILE now trusted for the gateway (null: the system store). */
  caFingerprint?: string | null;
}

export function caFingerprint(pem: string): string | null {
  try {
    return new X509Certificate(pem).fingerprint256;
  } catch {
    return null;
  }
}

export function keyFingerprint(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** Rereads the key, switches to it when valid, pings the gateway with it, writes the status. */
export async function reloadKey(running: RunningApi, flags: ConfigFlags, statusFile: string | undefined): Promise<ReloadStatus> {
  const fhir = running.api.context.fhir;
  let error: string | undefined;
  try {
    // A new key, and a new CA (`cert renew --renew-ca`) trusted for new connections before the gateway presents a certificate from it.
    fhir.useAccess(fhirAccessOf(loadConfig(flags)));
  } catch (err) {
    error = isHospitalApiError(err) ? err.code : 'ERR_INTERNAL';
  }
  let gateway = 'ok';
  try {
    await fhir.ping();
  } catch (err) {
    gateway = isHospitalApiError(err) ? err.code : 'failed';
  }
  const access = fhir.access();
  const status: ReloadStatus = {
    pid: process.pid, at: new Date().toISOString(), keyFingerprint: keyFingerprint(access.key), gateway, ...(error ? { error } : {}),
    caFingerprint: access.ca === null ? null : caFingerprint(access.ca),
  };
  if (statusFile) writeSecretFile(statusFile, JSON.stringify(status) + '\n');
  return status;
}

/** Installs the SIGHUP handler; reloads run one at a time. */
export function reloadKeyOnSignal(running: RunningApi, flags: ConfigFlags, statusFile: string | undefined, log: (text: string) => void): () => void {
  let chain: Promise<unknown> = Promise.resolve();
  const handler = (): void => {
    chain = chain.then(async () => {
      const s = await reloadKey(running, flags, statusFile).catch((err: unknown) => {
        log(`hospital-api serve: key reload failed: ${(err as Error).message}`);
        return null;
      });
      if (s) log(`hospital-api serve: FHIR_API_KEY reloaded (fingerprint ${s.keyFingerprint}, gateway ${s.gateway}${s.error ? `, settings ${s.error}: old key kept` : ''})`);
    });
  };
  process.on('SIGHUP', handler);
  return () => process.off('SIGHUP', handler);
}

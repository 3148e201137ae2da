/**
 * Key rotation on swarm (Runtime.reloadApiKey): the Hospital API's settings file is a
 * Swarm secret named by a digest of its content (secrets.ts), and a running task's
 * secrets never change: Docker's way to rotate one is to update the service with a new
 * secret (Docker docs, "Manage sensitive data with Docker secrets", "Rotate a secret").
 * So a new FHIR_API_KEY is a new deploy: Swarm replaces the API tasks one at a time
 * (templates/stack.yaml update_config: start-first while a node is spare, else
 * stop-first), and the runtime returns only once every running task mounts the new
 * secret (deploy.ts waitRolledOut). The key every task then uses is the one in the
 * settings file; the answer says whether the gateway accepts it, asked again within the
 * proxies' propagation time. The CA the tasks trust is a secret too (ca.pem, from
 * tls/ca.pem): the same deploy rolls a new CA bundle out, and the answer names the first
 * certificate of the bundle every task now mounts, as the API itself reports it on one host.
 */
import { readFileSync } from 'node:fs';
import { caFingerprint, keyFingerprint } from '../../api/fhir/key-reload.js';
import { withinPropagation } from '../propagation.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { probeKey } from '../key-probe.js';
import { readEnvFile } from '../../util/env-file.js';
import type { ApiKeyReload } from '../types.js';

export async function reloadSwarmApiKey(dir: string, config: InstallConfig, redeploy: () => Promise<void>, gatewayPropagationMs: number): Promise<ApiKeyReload> {
  const paths = installPaths(dir);
  const key = readEnvFile(paths.apiEnv).FHIR_API_KEY ?? '';
  const ca = caFingerprint(readFileSync(paths.caCert, 'utf8'));
  await redeploy();
  const fingerprint = keyFingerprint(key);
  if (!key) return { keyFingerprint: fingerprint, gateway: 'no FHIR_API_KEY', caFingerprint: ca };
  const { result } = await withinPropagation({ runtime: { gatewayPropagationMs } }, () => probeKey(dir, config, key), (p) => p.status === 200 && p.capability);
  return { keyFingerprint: fingerprint, gateway: result.status === 200 && result.capability ? 'ok' : String(result.status), caFingerprint: ca };
}

/**
 * Whether the native gateway serves the configuration it should (issue 12:
 * never "up" while its configuration is broken). Two sources:
 *
 * - the proxy's own report on the admin `GET /status` (field `proxy`, written
 *   by src/gateway/admin/info.ts from GatewayProxy.health()): `degraded` when
 *   the newest configuration version could not be applied and the last good
 *   one keeps serving;
 * - the state file on disk, schema-checked exactly as the gateway checks it
 *   when it starts (loadSnapshotFromFile): a file that fails that check is not
 *   what the gateway serves (it keeps the configuration it holds in memory) and
 *   the gateway would refuse to start on it after a restart or a reboot.
 */
import { loadSnapshotFromFile } from '../../gateway/store/index.js';

interface ProxyReport {
  degraded?: unknown;
  error?: unknown;
  appliedVersion?: unknown;
}

/** The reason the gateway is degraded, or null when it is not. `statusBody` is the admin `GET /status` JSON. */
export function gatewayDegradation(statusBody: unknown, statePath: string): string | null {
  const reasons: string[] = [];
  const proxy = (statusBody as { proxy?: ProxyReport } | null)?.proxy;
  if (proxy && proxy.degraded === true) {
    const applied = typeof proxy.appliedVersion === 'number' ? `version ${proxy.appliedVersion} still serves` : 'no configuration serves';
    reasons.push(`proxy: ${typeof proxy.error === 'string' ? proxy.error : 'newest configuration not applied'} (${applied})`);
  }
  try {
    loadSnapshotFromFile(statePath);
  } catch (err) {
    reasons.push(`${(err as Error).message}; the gateway keeps its last good configuration in memory and will refuse to start on this file (fix it, or restore it from a backup)`);
  }
  return reasons.length ? reasons.join('; ') : null;
}

/**
 * The Hospital API's metrics token (issue 45): `<dir>/secrets/api-metrics-token` (0600, like the other
 * generated secrets), made once by install and kept across reruns. The API requires it on GET /metrics
 * (METRICS_TOKEN_FILE, src/api/server/config.ts) and the Prometheus configuration install writes sends it
 * (`authorization.credentials_file`, src/install/monitoring.ts), as node_exporter's web config guards
 * its listener; so another local account reads no metrics. The native runtime names the file itself; the
 * docker runtime copies it into the API's folder (src/runtime/docker/container-files.ts); swarm has none yet.
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { InstallPaths } from './layout.js';

export const METRICS_TOKEN_FILE = 'api-metrics-token';

export function metricsTokenPath(paths: InstallPaths): string {
  return join(paths.secrets, METRICS_TOKEN_FILE);
}

/** The kept token, or a new one (32 random bytes, base64url), with its newline: the content of the file. */
export function metricsTokenFileText(paths: InstallPaths): string {
  const path = metricsTokenPath(paths);
  const kept = existsSync(path) ? readFileSync(path, 'utf8').trim() : '';
  return `${kept || randomBytes(32).toString('base64url')}\n`;
}

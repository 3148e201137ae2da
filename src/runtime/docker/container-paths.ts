/**
 * Where the API container sees its files (templates/compose.yaml mounts
 * docker/api there): the paths install writes into its settings and the
 * runtime copies the files to. Kept apart from container-files.ts so the
 * docker profile can name them without loading the renderer.
 */
export const API_MOUNT = '/run/hospital-api';
export const API_CONTAINER_PATHS = Object.freeze({
  env: `${API_MOUNT}/hospital-api.env`,
  ca: `${API_MOUNT}/tls/ca.pem`,
  /** The audit log's seal signer (issue 46): the install's audit-seal pair (never the record signer), copied in by container-files.ts. */
  sealCert: `${API_MOUNT}/tls/audit-seal.pem`,
  sealKey: `${API_MOUNT}/tls/audit-seal.key`,
  platformCa: `${API_MOUNT}/tls/platform-ca.pem`,
  /** METRICS_TOKEN_FILE (issue 45): the copy of <dir>/secrets/api-metrics-token, in docker/api/ on the host. */
  metricsToken: `${API_MOUNT}/metrics-token`,
  auditLog: '/var/log/hospital-api/audit.log',
  /** serve --reload-status: the API's answer to SIGHUP (src/api/fhir/key-reload.ts), in docker/api-status/ on the host. */
  reloadStatus: '/run/hospital-api-status/api-reload.json',
});

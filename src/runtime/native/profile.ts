/**
 * The native runtime's profile (src/runtime/profile.ts): its components run on
 * this host by role name, so the API and the gateway reach each other on
 * loopback, the whole install directory is private, and the gateway reads a
 * new certificate only when it starts.
 */
import { join } from 'node:path';
import { endpoints } from '../../install-dir/install-config.js';
import type { InstallPaths } from '../../install-dir/layout.js';
import { METRICS_TOKEN_FILE, metricsTokenFileText, metricsTokenPath } from '../../install-dir/metrics-token.js';
import type { RuntimeProfile } from '../profile.js';
import { hasAuditSeal } from '../../install-dir/audit-seal-files.js';

/** The API runs on the host: AUDIT_LOG is the file itself. */
export const nativeAuditLog = (paths: InstallPaths): string => join(paths.logs, 'audit.log');

export const nativeProfile: RuntimeProfile = {
  name: 'native',
  available: async () => true,
  supervisorChoice: true,
  componentNames: { api: 'api', gateway: 'gateway', fhir: 'fhir' },
  certificateHosts: ['localhost', '127.0.0.1'],
  requiredHosts: [],
  // its components are this toolkit on this host: no image, no replica
  installFlags: [],
  installSettings: async () => ({}),
  apiEnv: (paths, config) => ({
    FHIR_BASE_URL: endpoints(config).keyAuthBase,
    FHIR_CA_FILE: paths.caCert,
    AUDIT_LOG: nativeAuditLog(paths),
    // The audit log's seals (issue 46): the API's own audit-seal key, never the record signer's (which could
    // sign an ACCEPTED record); none without one (a hospital CA whose key install was not given).
    ...(hasAuditSeal(paths) ? { AUDIT_SEAL_CERT_FILE: paths.auditSealCert, AUDIT_SEAL_KEY_FILE: paths.auditSealKey } : {}),
    // issue 45: /metrics for the token's holder only (the service user, the Prometheus install configures)
    METRICS_TOKEN_FILE: metricsTokenPath(paths),
  }),
  auditLogFile: nativeAuditLog,
  // the install directory and its logs are private to the service's user (issue #12)
  privateFolders: (paths) => [paths.secrets, paths.tls, paths.root, paths.logs],
  secrets: (paths) => ({ [METRICS_TOKEN_FILE]: metricsTokenFileText(paths) }),
  renderFiles: async () => [],
  // its components are this toolkit: nothing to fetch
  prepare: async () => {},
  folders: [],
  fhirUpstream: (config) => `http://127.0.0.1:${config.ports.fhir}/fhir`,
  // the stand-in is a supervised component on loopback (components.ts)
  demoPlatformUrl: (port) => `http://127.0.0.1:${port}`,
  // the FHIR server listens on the install's host and answers GET /fhir/metadata to any address (components.ts)
  fhirBaseOnHost: (config) => endpoints(config).fhirBase,
  // components.ts binds the API and the gateway on 127.0.0.1, or on every address: loopback reaches both
  publishedAddress: () => '127.0.0.1',
  // the FHIR server gives its full API to its own user and root (src/util/local-peer.ts): no credential
  fhirClientHeaders: () => ({}),
  // the gateway's status listener takes the API's metrics token (components.ts --status-token-file)
  gatewayStatusTokenFile: (paths) => metricsTokenPath(paths),
  // the supervisor, or the systemd timer, runs `verify --scheduled`
  scheduledAcceptance: true,
  gatewayHttpOnHost: true,
  // the gateway's --status-listen is an argument of its process (components.ts)
  restartForMonitoring: ['gateway'],
  restartForNewCertificate: ['gateway'],
  privacy: (p) => ({
    // What the stack itself writes (under its umask 077) must be private file by file; elsewhere a
    // private folder is what keeps its contents from other users (demo data, certificates).
    paths: [
      ...[p.root, p.tls, join(p.root, 'demo')].map((path) => ({ path, recursive: false })),
      ...[p.fhirData, p.logs, p.run, p.secrets, join(p.root, 'gateway')].map((path) => ({ path, recursive: true })),
    ],
    summary: 'folders 0700, data, logs and keys 0600',
    hint: `Restart the stack (\`hospital-api down && hospital-api up\` fixes the modes of a native install), or \`chmod -R go-rwx ${p.root}\`.`,
  }),
};

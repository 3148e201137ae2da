/**
 * The docker runtime's profile (src/runtime/profile.ts): its components are
 * compose services on one project network, so the API reaches the gateway as
 * https://kong:8443 (which the certificate must name) and the gateway reaches
 * HAPI as http://hapi:8080; Kong's and HAPI's databases get generated
 * passwords; the install directory holds the compose project (docker/). The
 * renderer and the engine probe are loaded only when install asks for them.
 */
import { isIP } from 'node:net';
import { basename, join } from 'node:path';
import type { InstallPaths } from '../../install-dir/layout.js';
import type { RuntimeProfile } from '../profile.js';
import { API_CONTAINER_PATHS } from './container-paths.js';
import { SERVICE_OF } from '../container/services.js';
import { DEMO_PLATFORM } from '../container/demo-platform.js';
import { doorClientHeaders } from '../container/door-token.js';
import { containerSecrets } from '../container/generated-secrets.js';
import { hasAuditSeal } from '../../install-dir/audit-seal-files.js';

/** The API container's AUDIT_LOG, in the folder mounted from the host. */
export const dockerAuditLog = (paths: InstallPaths): string => join(paths.docker, 'api-logs', basename(API_CONTAINER_PATHS.auditLog));

/** The address on this host that reaches a port published on `bind` (every address, 0.0.0.0 or ::, by loopback): an IP, no brackets. */
export function hostAddressOf(bind: string): string {
  if (bind === '0.0.0.0') return '127.0.0.1';
  return bind === '::' ? '::1' : bind;
}

export const dockerProfile: RuntimeProfile = {
  name: 'docker',
  // only when both the engine and a working Compose answer; with --runtime docker and
  // no Compose, the runtime's first start says so (ERR_INSTALL_DOCKER_NO_COMPOSE)
  async available() {
    const { dockerEngineAnswers, findCompose } = await import('../container/compose.js');
    return (await dockerEngineAnswers()) && (await findCompose()) !== null;
  },
  supervisorChoice: false,
  componentNames: SERVICE_OF,
  certificateHosts: ['localhost', '127.0.0.1', 'kong'],
  requiredHosts: [{ name: 'kong', why: 'the Hospital API container reaches the gateway as https://kong:8443' }],
  installFlags: ['kongImage', 'hapiImage', 'postgresImage', 'apiImage', 'bindAddress', 'fhirBindAddress'],
  async installSettings(hosts, previous, flags) {
    const { dockerSettings } = await import('./render.js');
    return { docker: dockerSettings(hosts, previous?.docker, flags) };
  },
  apiEnv: (paths) => ({
    FHIR_BASE_URL: 'https://kong:8443/fhir-api-key-auth',
    FHIR_CA_FILE: API_CONTAINER_PATHS.ca,
    AUDIT_LOG: API_CONTAINER_PATHS.auditLog,
    // the audit-seal pair (issue 46), copied in by container-files.ts; none without one
    ...(hasAuditSeal(paths) ? { AUDIT_SEAL_CERT_FILE: API_CONTAINER_PATHS.sealCert, AUDIT_SEAL_KEY_FILE: API_CONTAINER_PATHS.sealKey } : {}),
    METRICS_TOKEN_FILE: API_CONTAINER_PATHS.metricsToken,
  }),
  // templates/compose.yaml mounts <dir>/docker/api-logs at AUDIT_LOG's folder in the API container
  auditLogFile: dockerAuditLog,
  privateFolders: (paths) => [paths.secrets, paths.tls],
  // the two database passwords, the FHIR door's token and the metrics token (container/generated-secrets.ts)
  secrets: containerSecrets,
  async renderFiles(dir, config) {
    const { composeFile, renderCompose } = await import('./render.js');
    return [{ path: composeFile(dir), text: renderCompose(dir, config) }];
  },
  folders: [{ folder: 'docker', kind: 'docker' }],
  async prepare(config, log) {
    const { dockerCli, requireCompose } = await import('../container/compose.js');
    const { imagesToPull, pullMissingImages } = await import('./images.js');
    const { settingsOf } = await import('./render.js');
    const compose = await requireCompose();
    // only `docker` itself runs here (image inspect, info, pull): no project yet
    await pullMissingImages(dockerCli('', '', { docker: 'docker', compose: compose.argv }), imagesToPull(settingsOf(config)), log);
  },
  fhirUpstream: () => 'http://hapi:8080/fhir',
  // the stand-in is a service of the demo project (demo-platform.ts DEMO_PLATFORM), reached over its network
  demoPlatformUrl: () => DEMO_PLATFORM.url,
  // HAPI is not published: the FHIR door (src/fhir-door/) is, in its place, on fhirBindAddress only (127.0.0.1 unless the hospital opened it):
  // a site's host name would reach nothing there. Published on every address, the host name does.
  fhirBaseOnHost(config) {
    const bind = config.docker?.fhirBindAddress ?? '127.0.0.1';
    const everywhere = bind === '0.0.0.0' || bind === '::';
    const host = everywhere ? (config.hosts[0] ?? 'localhost') : bind;
    return `http://${isIP(host) === 6 ? `[${host}]` : host}:${config.ports.fhir}/fhir`;
  },
  // published on --bind-address only: a site bound to its LAN address answers nowhere else (docker-proxy binds that address)
  publishedAddress: (config) => hostAddressOf(config.docker?.bindAddress ?? '127.0.0.1'),
  // the door opens GET /fhir/metadata to anyone and the rest to its token (door-token.ts); an install
  // from before the door has no token yet, and HAPI itself is still published there until its next `up`
  fhirClientHeaders: doorClientHeaders,
  // Kong's status listener (status_listen) takes no credential: published on the host's loopback only
  gatewayStatusTokenFile: () => null,
  // two compose services, neither with the engine socket (acceptance.ts); the API container reads reports/ read-only
  scheduledAcceptance: true,
  // Kong's plain proxy port (8000) is not published
  gatewayHttpOnHost: false,
  // `compose up` recreates kong and the API when their published ports change
  restartForMonitoring: [],
  restartForNewCertificate: [],
  privacy: (p) => ({
    // secrets/ and the containers' copies: the folders private, what holds a secret or patient names private file by file
    paths: [
      { path: p.secrets, recursive: true },
      ...[p.tls, p.docker, join(p.docker, 'api'), join(p.docker, 'api', 'tls')].map((path) => ({ path, recursive: false })),
      ...[join(p.docker, 'secrets'), join(p.docker, 'hapi-config'), join(p.docker, 'fhir-door'), join(p.docker, 'api-logs'), join(p.docker, 'platform')].map((path) => ({ path, recursive: true })),
      { path: join(p.docker, 'api', 'hospital-api.env'), recursive: false },
    ],
    summary: 'settings and keys 0600',
    hint: `\`hospital-api up\` rewrites the containers' copies under ${p.docker} 0600, owned by each container's user; that needs root (sudo) unless the installer's uid is the container's. Other paths: \`chmod go-rwx <path>\`.`,
  }),
};

/**
 * The Docker Swarm runtime's profile (src/runtime/profile.ts), issue 29: the
 * docker runtime's components as services of one stack over several hosts,
 * on an overlay network, so the API still reaches the gateway as
 * https://kong:8443 and the gateway HAPI as http://hapi:8080; passwords, keys
 * and the API's settings are Swarm secrets (/run/secrets/ in the tasks).
 *
 * The runtime (index.ts) deploys, reads and reaches the stack; install runs it
 * from a manager (prepare refuses any other host before anything is written).
 * The renderer and the runtime are loaded only when asked.
 */
import { join } from 'node:path';
import type { RuntimeProfile } from '../profile.js';
import { SERVICE_OF } from '../container/services.js';
import { DEMO_PLATFORM } from '../container/demo-platform.js';
import { doorClientHeaders } from '../container/door-token.js';
import { containerSecrets } from '../container/generated-secrets.js';
import { hasAuditSeal } from '../../install-dir/audit-seal-files.js';

/** Where the API's files are in its tasks: Swarm mounts each secret at /run/secrets/<target> (templates/stack.yaml). */
export const SWARM_API_PATHS = Object.freeze({
  env: '/run/secrets/hospital-api.env',
  ca: '/run/secrets/ca.pem',
  auditLog: '/var/log/hospital-api/audit.log',
  /** The audit log's seal signer (issue 46): the install's audit-seal pair (never the record signer), as two secrets. */
  sealCert: '/run/secrets/audit-seal.pem',
  sealKey: '/run/secrets/audit-seal.key',
});

/** Where a swarm's audit logs are: one per node that has run an API task (templates/stack.yaml, volume api-audit). */
export function swarmAuditLogElsewhere(stack: string): string {
  return `on a swarm each node that runs an API task keeps its own audit log, in its volume ${stack}_api-audit (\`docker volume inspect ${stack}_api-audit\` on that node gives the path; \`hospital-api audit verify FILE\` checks a copy)`;
}

export const swarmProfile: RuntimeProfile = {
  name: 'swarm',
  // only a manager of an active swarm deploys stacks; never the default (profiles.ts puts native before it)
  async available() {
    const { swarmManagerHere } = await import('./engine.js');
    return swarmManagerHere();
  },
  supervisorChoice: false,
  componentNames: SERVICE_OF,
  certificateHosts: ['localhost', '127.0.0.1', 'kong'],
  requiredHosts: [{ name: 'kong', why: 'the Hospital API tasks reach the gateway as https://kong:8443 on the stack network' }],
  installFlags: [
    'kongImage',
    'hapiImage',
    'postgresImage',
    'apiImage',
    'gatewayReplicas',
    'fhirReplicas',
    'apiReplicas',
    'kongDatabaseNode',
    'fhirDatabaseNode',
    'kongDatabaseUrl',
    'fhirDatabaseUrl',
    'databaseCa',
    'overlayEncryption',
  ],
  async installSettings(_hosts, previous, flags) {
    const { swarmSettings } = await import('./settings.js');
    return { swarm: swarmSettings(previous?.swarm, flags) };
  },
  apiEnv: (paths) => ({
    FHIR_BASE_URL: 'https://kong:8443/fhir-api-key-auth',
    FHIR_CA_FILE: SWARM_API_PATHS.ca,
    AUDIT_LOG: SWARM_API_PATHS.auditLog,
    // the audit-seal pair (issue 46), two secrets (secrets.ts); none without one
    ...(hasAuditSeal(paths) ? { AUDIT_SEAL_CERT_FILE: SWARM_API_PATHS.sealCert, AUDIT_SEAL_KEY_FILE: SWARM_API_PATHS.sealKey } : {}),
  }),
  // each node that runs an API task keeps its own audit log, in its api-audit volume: none is on this host as such
  auditLogFile: () => null,
  async auditLogElsewhere(dir) {
    const { projectName } = await import('../container/project.js');
    return swarmAuditLogElsewhere(projectName(dir));
  },
  privateFolders: (paths) => [paths.secrets, paths.tls, join(paths.root, 'swarm')],
  // the same generated secrets as the docker runtime: the two database passwords and the FHIR door's token
  secrets: containerSecrets,
  async renderFiles(dir, config) {
    const { renderStack, stackFile } = await import('./render.js');
    const { secretPayloads } = await import('./secrets.js');
    // the node count is known when the runtime deploys, and it renders again then
    return [{ path: stackFile(dir), text: renderStack(dir, config, { payloads: secretPayloads(dir, config), eligibleNodes: null }) }];
  },
  // backups of a swarm install come with its day-two operations
  folders: [],
  // this host must be a manager, and the database nodes install was told must exist: checked before anything is written
  async prepare(config) {
    const { dockerCli } = await import('../container/compose.js');
    const { labelPlan, selfNode, swarmNodes } = await import('./deploy.js');
    const cli = dockerCli('', '', { docker: 'docker', compose: [] });
    const self = await selfNode(cli);
    labelPlan(config, await swarmNodes(cli), self);
  },
  fhirUpstream: () => 'http://hapi:8080/fhir',
  // the demo runs on one host (profiles.ts DEMO_RUNTIMES): never on swarm
  demoPlatformUrl: () => DEMO_PLATFORM.url,
  // the FHIR door is published (mode: host, every address) on the admin node, the one install runs on
  fhirBaseOnHost: (config) => `http://127.0.0.1:${config.ports.fhir}/fhir`,
  // ports are published in host mode on every address of each node that runs the task: loopback of this
  // manager reaches the API when one of its tasks runs here (the gateway is probed per node: gatewayNodes)
  publishedAddress: () => '127.0.0.1',
  fhirClientHeaders: doorClientHeaders,
  // Kong's status listener (status_listen) takes no credential
  gatewayStatusTokenFile: () => null,
  // docs/operations.md, "Scheduled acceptance": the refusal below says why
  scheduledAcceptance: false,
  scheduledAcceptanceRefusal:
    "a swarm service cannot join the gateway's network namespace (a stack has no `network_mode: service:`), and reaching Kong's admin API from anywhere else needs the engine's socket, which is root on the node; " +
    'schedule `hospital-api verify --scheduled --dir <install dir>` on the manager node that holds the install directory (a systemd timer or cron job, as root or the install\'s owner; docs/operations.md, "Scheduled acceptance")',
  gatewayHttpOnHost: false,
  // the next deploy updates the services whose ports changed
  restartForMonitoring: [],
  // a new certificate is a new secret: the next deploy rolls the gateway's tasks
  restartForNewCertificate: [],
  privacy: (p) => ({
    paths: [
      { path: p.secrets, recursive: true },
      { path: p.tls, recursive: false },
      { path: join(p.root, 'swarm'), recursive: false },
      { path: join(p.root, 'swarm', 'secrets'), recursive: true },
    ],
    summary: 'settings and keys 0600',
    hint: 'Run `chmod -R go-rwx <path>`; the stack reads its secrets through the Docker CLI, as the installer.',
  }),
};

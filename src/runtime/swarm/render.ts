/**
 * Renders templates/stack.yaml into <install dir>/swarm/stack.yaml, the stack
 * `docker stack deploy` runs (docker.io 20.10, compose file format 3.8). The
 * docker runtime's pure pieces are reused, not copied: its template filler
 * (string values as JSON strings, so no value can break or extend the file),
 * images, probe timings, the Postgres probe, Kong's worker count and the API
 * and HAPI users. String values never hold a secret: secrets are named here
 * (secrets.ts), their contents go to files only.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../version.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { HSTS_DIRECTIVE } from '../../gateway/proxy/proxy-add-header.js';
import { API_IMAGE_UID, builtApiImage, HAPI_IMAGE_USER, KONG_WORKERS } from '../container/images.js';
import { HUNG_PROBE, postgresProbe } from '../container/hung-check.js';
import { projectName } from '../container/project.js';
import { renderTemplate } from '../container/template.js';
import { databaseEndpoint } from './databases.js';
import { DATABASE_CA_PATH, secretName, type SecretKey, type SecretPayloads } from './secrets.js';
import { swarmSettings } from './settings.js';

export const STACK_TEMPLATE_PATH = join(PROJECT_ROOT, 'templates', 'stack.yaml');

export function stackFile(dir: string): string {
  return join(dir, 'swarm', 'stack.yaml');
}

/** The user of the postgres image (docker-library/postgres Dockerfile: `useradd -r -g postgres --uid=999`, gid 999): the ops task's. */
export const POSTGRES_IMAGE_USER = Object.freeze({ uid: 999, gid: 999 });

/**
 * How long a database's healthcheck failures do not count (Docker docs, HEALTHCHECK
 * `--start-period`): a first initdb, or a recovery from the write-ahead log after a
 * crash, must never be cut by Swarm replacing the task (container/hung-check.ts postgresProbe: a
 * database killed while it initialises is left half made).
 */
export const DATABASE_START_PERIOD_S = 600;

/** The services of templates/stack.yaml. */
export const STACK_SERVICES = ['kong-database', 'hapi-database', 'kong-migrations', 'kong', 'kong-admin', 'hapi', 'fhir-door', 'hospital-api', 'ops'] as const;

/** The one-shot services: each runs to completion when the runtime asks, and is at 0 replicas otherwise. */
export const ONE_SHOT_STACK_SERVICES: readonly StackService[] = ['kong-migrations'];

export type StackService = (typeof STACK_SERVICES)[number];

/** How the docker CLI reads a stack file: YAML 1.1 (gopkg.in/yaml.v2), merge keys included. */
export const STACK_YAML = Object.freeze({ merge: true, version: '1.1' } as const);

/** What the stack needs beyond install.json, known when it is deployed. */
export interface StackInputs {
  /** Each secret's content: only its digest reaches the file (the secret's name). */
  payloads: SecretPayloads;
  /** Nodes that may run a gateway or API task (`docker node ls`, active and ready); null: not known yet. */
  eligibleNodes: number | null;
  /** Replicas of some services other than install.json's (the runtime's start phases). */
  scale?: Partial<Record<StackService, number>>;
  /** Which run of Kong's migrations this deploy starts (a new value starts a new task); none when absent. */
  migrationsRun?: string;
}

/**
 * How a service with a published port is updated (`update_config.order`). Its port is
 * bound on the node (mode: host), so a new task needs a node where it is free (swarmkit
 * manager/scheduler/filter.go, HostPortFilter): start-first, so no moment without the old
 * task, only when there are fewer tasks than eligible nodes; else stop-first.
 */
export function updateOrder(replicas: number, eligibleNodes: number | null): 'start-first' | 'stop-first' {
  return eligibleNodes !== null && replicas < eligibleNodes ? 'start-first' : 'stop-first';
}

/**
 * How often each of Kong's proxies reads what kong-admin wrote to the database
 * (KONG_DB_UPDATE_FREQUENCY; Kong/kong kong.conf.default db_update_frequency, default 5 s).
 */
export const KONG_DB_UPDATE_FREQUENCY_S = 2;

/**
 * How long a change through kong-admin may take to be served by every proxy: a proxy
 * polls every KONG_DB_UPDATE_FREQUENCY_S and db_update_propagation is 0 on Postgres
 * (kong.conf.default), so one period, doubled for the poll query and the cache purge
 * behind it on a loaded node.
 */
export const GATEWAY_PROPAGATION_MS = 2 * KONG_DB_UPDATE_FREQUENCY_S * 1000;

const SECRET_PLACEHOLDERS: Readonly<Record<SecretKey, string>> = {
  'kong-pg-password': 'secretKongPgPassword',
  'hapi-pg-password': 'secretHapiPgPassword',
  'gateway.pem': 'secretGatewayCert',
  'gateway.key': 'secretGatewayKey',
  'hospital-api.env': 'secretApiEnv',
  'ca.pem': 'secretApiCa',
  'door-token': 'secretDoorToken',
  pgpass: 'secretPgpass',
  'database-ca.pem': 'secretDatabaseCa',
  'audit-seal.pem': 'secretAuditSealCert',
  'audit-seal.key': 'secretAuditSealKey',
};

/**
 * HAPI's JDBC URL: pgjdbc's time-outs bound a connect to a vanished address (5 s) and a hung query (300 s);
 * keep-alive finds a dead peer. A database outside the swarm: TLS verified against the hospital's CA, host
 * name included (pgjdbc docs, "Using SSL": sslmode=verify-full, sslrootcert a PEM file).
 */
function hapiJdbcUrl(config: InstallConfig): string {
  const db = databaseEndpoint(config, 'fhir');
  const host = db.host.includes(':') ? `[${db.host}]` : db.host;
  const tls = db.own ? '' : `&sslmode=verify-full&sslrootcert=${DATABASE_CA_PATH}`;
  return `jdbc:postgresql://${host}:${db.port}/${db.database}?connectTimeout=5&socketTimeout=300&tcpKeepAlive=true${tls}`;
}

/** Removes the lines from `# >>> name` to `# <<< name` (a database the hospital runs elsewhere). */
function cutService(text: string, name: StackService): string {
  const start = text.indexOf(`  # >>> ${name}`);
  const endMarker = `  # <<< ${name}\n`;
  const end = text.indexOf(endMarker, start);
  if (start < 0 || end < 0) throw new Error(`templates/stack.yaml has no markers around ${name}`);
  return text.slice(0, start) + text.slice(end + endMarker.length);
}

function probeCommand(service: string, user: string, db: string): string {
  return postgresProbe(service, user, db).command;
}

/** The rendered stack file as text; parsed once to be sure it is YAML. */
export function renderStack(dir: string, config: InstallConfig, inputs: StackInputs, template = readFileSync(STACK_TEMPLATE_PATH, 'utf8')): string {
  const s = config.swarm ?? swarmSettings(undefined, {});
  // one stack per install directory, as the docker runtime's compose project: <stack>_<service>
  const stack = projectName(dir);
  const replicas = s.replicas;
  const kongDb = databaseEndpoint(config, 'kong');
  const hapiDb = databaseEndpoint(config, 'fhir');
  const scale = (service: StackService, fallback: number): number => inputs.scale?.[service] ?? fallback;
  // The image's own user (its Dockerfile), not the installer's as on one host: a task reads no file
  // of this host, only its secrets (mounted with this uid), and its audit volume takes the owner of
  // the image's /var/log/hospital-api, which is this user's.
  const api = { uid: API_IMAGE_UID, gid: API_IMAGE_UID };
  const [hapiUid, hapiGid] = HAPI_IMAGE_USER.split(':').map(Number) as [number, number];
  const secretNames = Object.fromEntries(
    (Object.entries(SECRET_PLACEHOLDERS) as Array<[SecretKey, string]>).map(([key, placeholder]) => [placeholder, secretName(stack, key, inputs.payloads[key])]),
  );
  const gateway = scale('kong', replicas.gateway);
  const apiTasks = scale('hospital-api', replicas.api);
  let text = renderTemplate(template, {
    kongImage: s.images.kong,
    hapiImage: s.images.hapi,
    postgresImage: s.images.postgres,
    apiImage: s.images.api ?? builtApiImage(config.toolkitVersion),
    kongDbUpdateFrequency: String(KONG_DB_UPDATE_FREQUENCY_S),
    kongProxyAddHeader: HSTS_DIRECTIVE,
    kongPgHost: kongDb.host,
    kongPgPort: kongDb.port,
    kongPgUser: kongDb.user,
    kongPgDatabase: kongDb.database,
    kongPgSsl: kongDb.own ? 'off' : 'on',
    kongTrustedCertificate: kongDb.own ? 'system' : DATABASE_CA_PATH,
    hapiJdbcUrl: hapiJdbcUrl(config),
    hapiPgUser: hapiDb.user,
    kongWorkers: KONG_WORKERS,
    probeIntervalS: HUNG_PROBE.intervalS,
    probeTimeoutS: HUNG_PROBE.timeoutS,
    probeTimeoutMs: HUNG_PROBE.timeoutS * 1000,
    // the probe's own time-out plus room for the interpreter to start
    healthTimeoutS: HUNG_PROBE.timeoutS + 2,
    hungFailures: HUNG_PROBE.failures,
    startGraceS: HUNG_PROBE.startGraceS,
    hapiStartGraceS: HUNG_PROBE.hapiStartGraceS,
    databaseStartPeriodS: DATABASE_START_PERIOD_S,
    kongDatabaseProbe: probeCommand('kong-database', 'kong', 'kong'),
    hapiDatabaseProbe: probeCommand('hapi-database', 'hapi', 'hapi'),
    hapiUid,
    hapiGid,
    apiUser: `${api.uid}:${api.gid}`,
    apiUid: api.uid,
    apiGid: api.gid,
    postgresUser: `${POSTGRES_IMAGE_USER.uid}:${POSTGRES_IMAGE_USER.gid}`,
    postgresUid: POSTGRES_IMAGE_USER.uid,
    postgresGid: POSTGRES_IMAGE_USER.gid,
    gatewayHttpsPort: config.ports.gatewayHttps,
    apiPort: config.ports.api,
    fhirPort: config.ports.fhir,
    kongDatabaseReplicas: scale('kong-database', 1),
    hapiDatabaseReplicas: scale('hapi-database', 1),
    gatewayReplicas: gateway,
    kongAdminReplicas: scale('kong-admin', 1),
    // a one-shot: 0 unless the runtime runs it (deploy.ts)
    kongMigrationsReplicas: scale('kong-migrations', 0),
    kongMigrationsRun: inputs.migrationsRun ?? 'none',
    fhirReplicas: scale('hapi', replicas.fhir),
    fhirDoorReplicas: scale('fhir-door', 1),
    apiReplicas: apiTasks,
    opsReplicas: scale('ops', 1),
    gatewayUpdateOrder: updateOrder(gateway, inputs.eligibleNodes),
    apiUpdateOrder: updateOrder(apiTasks, inputs.eligibleNodes),
    // IPsec (ESP) between nodes for the overlay's traffic (Docker docs, "Use overlay networks":
    // `--opt encrypted`); off only when the hospital said so (kernels without ESP pass no traffic then)
    overlayOptions: { raw: s.overlayEncryption ? '    driver_opts:\n      encrypted: ""\n' : '' },
    ...secretNames,
  });
  if (!kongDb.own) text = cutService(text, 'kong-database');
  if (!hapiDb.own) text = cutService(text, 'hapi-database');
  parse(text, STACK_YAML);
  return text;
}

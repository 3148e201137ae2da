/**
 * Renders templates/compose.yaml into <install dir>/docker/compose.yaml
 * (container/template.ts fills it: no value can break or extend the file).
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../version.js';
import { gatewayStatusPort, type DockerSettings, type InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { demoPlatformService } from '../container/demo-platform.js';
import { SERVICE_OF } from '../container/services.js';
import { API_IMAGE_UID, builtApiImage, HAPI_IMAGE_USER, IMAGES, KONG_WORKERS } from '../container/images.js';
import { HUNG_PROBE, postgresProbe, shellHungCheck } from '../container/hung-check.js';
import { renderTemplate, type Raw } from '../container/template.js';
import { HSTS_DIRECTIVE } from '../../gateway/proxy/proxy-add-header.js';
import { acceptanceServices } from './acceptance.js';

/**
 * The uid:gid of hapi-pidns, the holder of HAPI's PID namespace: nobody, so
 * never HAPI's (the watchdog counts only processes of HAPI's uid).
 */
export const PIDNS_HOLDER_USER = '65534:65534';

export const TEMPLATE_PATH = join(PROJECT_ROOT, 'templates', 'compose.yaml');

export function composeFile(dir: string): string {
  return join(installPaths(dir).docker, 'compose.yaml');
}

/** True for localhost and loopback addresses. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/**
 * The docker settings of an install: flags first, then what a previous install
 * chose, then defaults. A loopback-only install (every --host is loopback)
 * publishes on 127.0.0.1; any other on every address. FHIR stays on 127.0.0.1
 * unless opened with --fhir-bind-address.
 */
export function dockerSettings(
  hosts: string[],
  previous: DockerSettings | undefined,
  flags: { kongImage?: string; hapiImage?: string; postgresImage?: string; apiImage?: string; bindAddress?: string; fhirBindAddress?: string } = {},
): DockerSettings {
  const loopbackOnly = hosts.every(isLoopbackHost);
  return {
    images: {
      kong: flags.kongImage ?? previous?.images.kong ?? IMAGES.kong,
      hapi: flags.hapiImage ?? previous?.images.hapi ?? IMAGES.hapi,
      postgres: flags.postgresImage ?? previous?.images.postgres ?? IMAGES.postgres,
      api: flags.apiImage ?? previous?.images.api ?? null,
    },
    bindAddress: flags.bindAddress ?? previous?.bindAddress ?? (loopbackOnly ? '127.0.0.1' : '0.0.0.0'),
    fhirBindAddress: flags.fhirBindAddress ?? previous?.fhirBindAddress ?? '127.0.0.1',
  };
}

/** The settings of an install.json written before they existed: the defaults. */
export function settingsOf(config: InstallConfig): DockerSettings {
  return config.docker ?? dockerSettings(config.hosts, undefined);
}

/** "127.0.0.1:9000:9000"; IPv6 addresses in brackets (Compose short port syntax). */
export function publish(address: string, hostPort: number, containerPort: number): string {
  const a = isIP(address) === 6 ? `[${address}]` : address;
  return `${a}:${hostPort}:${containerPort}`;
}

/**
 * `install --monitoring`: Kong's status listener and the API's metrics listener
 * listen on the container's addresses and are published on the host's
 * loopback only, where a Prometheus on the node scrapes them; without it they
 * stay on 127.0.0.1 inside their containers (Kong's default status_listen,
 * the API's default METRICS_LISTEN).
 */
function monitoringValues(config: InstallConfig): Record<string, string | Raw> {
  const status = gatewayStatusPort(config);
  if (status === null) {
    return { kongStatusListen: '127.0.0.1:8007', kongStatusPublish: { raw: '' }, apiMetricsEnv: { raw: '' }, apiMetricsPublish: { raw: '' } };
  }
  return {
    kongStatusListen: '0.0.0.0:8007',
    kongStatusPublish: { raw: `      - ${JSON.stringify(publish('127.0.0.1', status, 8007))}\n` },
    // The API reads its environment over its settings file (`serve --env-file`).
    apiMetricsEnv: { raw: '      METRICS_LISTEN: "0.0.0.0:9464"\n' },
    apiMetricsPublish: { raw: `      - ${JSON.stringify(publish('127.0.0.1', config.ports.metrics, 9464))}\n` },
  };
}

/** A host port the compose project publishes: which service, on which address, set by which install flag. */
export interface PublishedPort {
  service: string;
  host: string;
  port: number;
  flag: string;
}

/** Every host port the rendered project publishes (the same facts renderCompose writes), for `up`'s preflight. */
export function publishedPorts(config: InstallConfig): PublishedPort[] {
  const s = settingsOf(config);
  const status = gatewayStatusPort(config);
  return [
    { service: SERVICE_OF.gateway, host: s.bindAddress, port: config.ports.gatewayHttps, flag: '--gateway-https-port' },
    { service: SERVICE_OF.api, host: s.bindAddress, port: config.ports.api, flag: '--api-port' },
    { service: 'fhir-door', host: s.fhirBindAddress, port: config.ports.fhir, flag: '--fhir-port' },
    ...(status === null
      ? []
      : [
          { service: SERVICE_OF.gateway, host: '127.0.0.1', port: status, flag: '--gateway-status-port' },
          { service: SERVICE_OF.api, host: '127.0.0.1', port: config.ports.metrics, flag: '--metrics-port' },
        ]),
  ];
}

/** A string as a YAML scalar Compose does not interpolate (`$` doubled). */
export function composeLiteral(s: string): string {
  return JSON.stringify(s.replaceAll('$', '$$$$'));
}

/** The installer's uid:gid, root included: the owner of the install directory's files (acceptance.ts runs as it). */
export function installerUser(uid = process.getuid?.() ?? API_IMAGE_UID, gid = process.getgid?.() ?? API_IMAGE_UID): { uid: number; gid: number } {
  return { uid, gid };
}

/** The uid:gid the API container runs as: the installer's, never root. */
export function apiUser(uid = process.getuid?.() ?? API_IMAGE_UID, gid = process.getgid?.() ?? API_IMAGE_UID): { uid: number; gid: number } {
  return uid === 0 ? { uid: API_IMAGE_UID, gid: API_IMAGE_UID } : { uid, gid: gid === 0 ? uid : gid };
}

/** The rendered compose file as text; parsed once to be sure it is YAML. */
export function renderCompose(dir: string, config: InstallConfig, template = readFileSync(TEMPLATE_PATH, 'utf8')): string {
  const s = settingsOf(config);
  const user = apiUser();
  const apiImage = s.images.api ?? builtApiImage(config.toolkitVersion);
  const build = s.images.api
    ? ''
    : [
        '    build:',
        `      context: ${JSON.stringify(PROJECT_ROOT.replace(/\/$/, ''))}`,
        '      dockerfile: Dockerfile',
        // build the local Dockerfile, never look for this tag in a registry
        '    pull_policy: build',
        '',
      ].join('\n');
  const root = installPaths(dir).root;
  const monitoring = monitoringValues(config);
  const text = renderTemplate(template, {
    kongImage: s.images.kong,
    postgresImage: s.images.postgres,
    hapiImage: s.images.hapi,
    apiImage,
    apiBuild: { raw: build },
    apiUser: `${user.uid}:${user.gid}`,
    kongWorkers: KONG_WORKERS,
    probeIntervalS: HUNG_PROBE.intervalS,
    probeTimeoutS: HUNG_PROBE.timeoutS,
    probeTimeoutMs: HUNG_PROBE.timeoutS * 1000,
    hungFailures: HUNG_PROBE.failures,
    startGraceS: HUNG_PROBE.startGraceS,
    hapiStartGraceS: HUNG_PROBE.hapiStartGraceS,
    hapiUser: HAPI_IMAGE_USER,
    kongHungCheck: {
      raw: shellHungCheck({
        what: "Kong's admin API",
        command: `perl -MHTTP::Tiny -e 'exit(HTTP::Tiny->new(timeout => ${HUNG_PROBE.timeoutS})->get("http://127.0.0.1:8001/status")->{status} == 599 ? 1 : 0)'`,
        graceS: HUNG_PROBE.startGraceS,
      }),
    },
    kongDatabaseHungCheck: { raw: shellHungCheck(postgresProbe('kong-database', 'kong', 'kong')) },
    hapiDatabaseHungCheck: { raw: shellHungCheck(postgresProbe('hapi-database', 'hapi', 'hapi')) },
    pidnsUser: PIDNS_HOLDER_USER,
    kongProxyAddHeader: HSTS_DIRECTIVE,
    gatewayPublish: publish(s.bindAddress, config.ports.gatewayHttps, 8443),
    apiPublish: publish(s.bindAddress, config.ports.api, 9000),
    fhirPublish: publish(s.fhirBindAddress, config.ports.fhir, 8080),
    demoPlatform: { raw: config.demo ? demoPlatformService(apiImage, user) : '' },
    ...monitoring,
    // HOSPITAL_API_DIR: where the API finds reports/ (mounted there read-only) for its acceptance gauges
    // (src/api/server/metrics.ts); its certificates are not mounted, so it reports none of the install's
    apiMetricsEnv: { raw: `    environment:\n      HOSPITAL_API_DIR: ${composeLiteral(root)}\n${(monitoring.apiMetricsEnv as Raw).raw}` },
    apiReportsMount: { raw: composeLiteral(`${root}/reports:${root}/reports:ro`) },
    acceptance: { raw: config.verifyEvery ? acceptanceServices(root, config.verifyEvery, apiImage, installerUser()) : '' },
  });
  parse(text, { merge: true });
  return text;
}

/**
 * Renders templates/compose.yaml into <install dir>/docker/compose.yaml.
 * String values are written as JSON strings (valid YAML double-quoted
 * scalars), so no value can break or extend the file.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../version.js';
import { gatewayStatusPort, type DockerSettings, type InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { demoPlatformService } from './demo-platform.js';
import { SERVICE_OF } from './services.js';
import { HSTS_DIRECTIVE } from '../../gateway/proxy/proxy-add-header.js';
import { acceptanceServices } from './acceptance.js';

/**
 * Default images (issue 10), current and pinned: Kong 3.9.3 (nginx CVE fixes,
 * Kong/kong CHANGELOG.md), HAPI FHIR starter v8.10.0-3 (tags are the starter's
 * `image/` git tags, .github/workflows/build-images.yaml), Postgres 16.13
 * (docker-library/postgres versions.json). No digest is pinned here: none could
 * be read from a registry where this was written; pin one with the image flags
 * (`--kong-image kong:3.9.3@sha256:…`), which also name a hospital's own registry.
 */
export const IMAGES = Object.freeze({
  kong: 'kong:3.9.3',
  postgres: 'postgres:16.13',
  hapi: 'hapiproject/hapi:v8.10.0-3',
});

/** Kong's nginx workers: Kong's `auto` means one per host CPU (kong_defaults.lua). */
export const KONG_WORKERS = 2;

/**
 * How kong and hospital-api are replaced when hung (templates/compose.yaml, "Hung
 * components"): a probe intervalS after the previous one ends (Docker docs,
 * HEALTHCHECK: "then again interval seconds after each previous check
 * completes"), each given
 * timeoutS; after `failures` probes in a row without an answer the process is
 * killed and the container restarts. A hang is acted on within
 * failures × (intervalS + timeoutS) = 32 s. A process that never answered gets
 * startGraceS from the first probe that saw it; HAPI (hapi-watchdog) gets
 * hapiStartGraceS, since its first start creates its schema and a JVM on a small
 * host takes minutes to do so: a process killed before it ever answered would
 * only start that work again.
 */
export const HUNG_PROBE = Object.freeze({ intervalS: 5, timeoutS: 3, failures: 4, startGraceS: 60, hapiStartGraceS: 600 });

/** What a shell hung check probes, and how (shellHungCheck). */
export interface ShellProbe {
  /** Named in the log line: "no answer from <what> within …". */
  what: string;
  /** A shell command: exit 0 = answers and is healthy; notReadyExit = answers but is not healthy yet; anything else = no answer. */
  command: string;
  notReadyExit?: number;
  /** Seconds a process that never answered gets from the first probe that saw it; null: it is never killed before it has answered once. */
  graceS: number | null;
}

/**
 * The healthcheck script of a service whose image has a shell but no node (kong,
 * the Postgres databases), as templates/compose.yaml's "Hung components" says:
 * find the process docker-init started (the lowest pid whose parent is pid 1; proc(5) stat), keep
 * "<pid>:<starttime> <first seen> <answered once> <failures in a row>" in /tmp,
 * probe, and after HUNG_PROBE.failures probes in a row without an answer SIGKILL
 * that process so docker-init exits and the restart policy starts the container
 * again. Returned as the lines of a YAML block scalar under `- |` (10 spaces),
 * with `$` doubled for Compose's interpolation.
 */
export function shellHungCheck(p: ShellProbe, limits: { timeoutS: number; failures: number } = HUNG_PROBE): string {
  const mayKill = p.graceS === null ? '[ "$ok" = 1 ]' : `{ [ "$ok" = 1 ] || [ $((now - seen)) -ge ${p.graceS} ]; }`;
  const lines = [
    'f=/tmp/hospital-api-health; now=$(date +%s); main=; key=',
    'for s in /proc/[0-9]*/stat; do',
    '  { read -r l < "$s"; } 2>/dev/null || continue',
    '  set -- ${l##*") "}',
    // the lowest pid whose parent is docker-init: the glob is in text order, and an orphan reparented
    // to docker-init (a process a `docker exec` left) is younger, so higher, than the main process
    '  p=${s#/proc/}; p=${p%/stat}',
    '  if [ "$2" = 1 ] && { [ -z "$main" ] || [ "$p" -lt "$main" ]; }; then main=$p; key="$main:${20}"; fi',
    'done',
    'set -- $(cat "$f" 2>/dev/null)',
    'if [ -n "$key" ] && [ "$1" = "$key" ]; then seen=$2 ok=$3 n=$4; else seen=$now ok=0 n=0; fi',
    `${p.command}; rc=$?`,
    'if [ "$rc" = 0 ]; then echo "$key $seen 1 0" > "$f"; echo answers; exit 0; fi',
    ...(p.notReadyExit === undefined ? [] : [`if [ "$rc" = ${p.notReadyExit} ]; then echo "$key $seen 1 0" > "$f"; echo "answers, not ready"; exit 1; fi`]),
    'n=$((n + 1)); echo "$key $seen $ok $n" > "$f"',
    `m="no answer from ${p.what} within ${limits.timeoutS} s, $n probe(s) in a row"`,
    `if [ -n "$main" ] && [ "$n" -ge ${limits.failures} ] && ${mayKill}; then`,
    '  m="$m: SIGKILL to pid $main so the container restarts"; { echo "$m" >> /proc/1/fd/2; } 2>/dev/null; kill -KILL "$main"',
    'fi',
    'echo "$m"; exit 1',
  ];
  return lines.map((l) => `          ${l.replaceAll('$', () => '$$')}`).join('\n');
}

/**
 * A Postgres service's probe: pg_isready over TCP (during first initialisation the
 * entrypoint's temporary server listens on the unix socket only, docker-library/postgres
 * docker-entrypoint.sh), exit 1 "rejecting connections" (starting, recovering) is an
 * answer (PostgreSQL docs, pg_isready "Exit Status"). coreutils' timeout bounds it
 * whatever libpq does, so the count is always written. Never killed before its first
 * answer: a first start runs initdb, and a database killed then would be left half made.
 */
export function postgresProbe(service: string, user: string, db: string, timeoutS: number = HUNG_PROBE.timeoutS): ShellProbe {
  return {
    what: `${service} (pg_isready)`,
    command: `timeout -s KILL ${timeoutS + 1} pg_isready -q -h 127.0.0.1 -U ${user} -d ${db} -t ${timeoutS}`,
    notReadyExit: 1,
    graceS: null,
  };
}

/** The uid the API image's Dockerfile runs as (the node user of Debian-based Node images). */
export const API_IMAGE_UID = 1000;

/**
 * The uid:gid HAPI's image runs as (hapifhir/hapi-fhir-jpaserver-starter Dockerfile:
 * `USER 65532:65532`, distroless nonroot): hapi-watchdog runs as the same, which is
 * what lets it signal HAPI with no capability (kill(2)). An image with another
 * user is not watched; the watchdog's log says it finds no process to watch.
 */
export const HAPI_IMAGE_USER = '65532:65532';

/**
 * The uid:gid of hapi-pidns, the holder of HAPI's PID namespace: nobody, so
 * never HAPI's (the watchdog counts only processes of HAPI's uid).
 */
export const PIDNS_HOLDER_USER = '65534:65534';

export const TEMPLATE_PATH = join(PROJECT_ROOT, 'templates', 'compose.yaml');

/** A compose project name per install directory, stable across reruns. */
export function projectName(dir: string): string {
  const hash = createHash('sha256').update(installPaths(dir).root).digest('hex').slice(0, 8);
  return `hospital-api-${hash}`;
}

export function composeFile(dir: string): string {
  return join(installPaths(dir).docker, 'compose.yaml');
}

/** The tag the repository's Dockerfile is built as when no --api-image is given. */
export function builtApiImage(version: string): string {
  return `hospital-api:${version}`;
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

/** A value inserted as-is (the API's build block), never user input. */
interface Raw {
  raw: string;
}

export function renderTemplate(template: string, values: Record<string, string | number | Raw>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`template placeholder ${whole} has no value`);
    if (typeof value === 'object') return value.raw;
    return typeof value === 'number' ? String(value) : JSON.stringify(value);
  });
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

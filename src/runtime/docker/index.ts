/**
 * The docker runtime (production): Kong 3.9 + Postgres, HAPI FHIR + Postgres
 * and the hospital-api image in one compose project rendered from templates/.
 * Compose v2 or docker-compose 1.29+ (compose.ts); state from `docker inspect`
 * (parse.ts); admin calls inside the kong container (admin.ts); backup,
 * restore and the key and certificate reloads through the containers (day-two.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { HospitalApiError } from '../../errors/index.js';
import { missingApiSettings } from '../../install-dir/api-settings.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import type { AdminResponse, ComponentState, ComponentVersion, Runtime } from '../types.js';
import { adminCall } from '../container/admin.js';
import { containerFhirListeners, FHIR_SERVICES, resolveInContainer } from '../container/gateway-reach.js';
import { dockerLogs } from './logs.js';
import { imagesToPull, pullMissingImages } from './images.js';
import { dockerAuditLog, hostAddressOf } from './profile.js';
import { dockerCli, requireCompose, type DockerBinaries, type DockerCli } from '../container/compose.js';
import { resolveImageUsers, writeContainerFiles } from './container-files.js';
import { reloadDockerApiKey, reloadDockerGatewayTls, restoreDockerData, snapshotDockerData, type DayTwoContext } from './day-two.js';
import { componentsFromInspect, containerAddresses, serviceOf, staleNetworkJoins, stalePidJoins, versionsFromInspect, type ContainerInspect, type ImageInspect } from './parse.js';
import { composeFile, publishedPorts, renderCompose, settingsOf } from './render.js';
import { builtApiImage } from '../container/images.js';
import { projectName } from '../container/project.js';
import { referenceVersion } from '../container/image-reference.js';
import { isPortFree } from '../../util/port-check.js';
import { writeIfChanged } from '../../install-dir/write-if-changed.js';
import { refuseStaleVolumes } from './volumes.js';
import { dockerFailureCode } from '../container/failure.js';
import { DEMO_PLATFORM } from '../container/demo-platform.js';
import { SERVICE_OF } from '../container/services.js';
import { ACCEPTANCE_SERVICE, insideComponents, RELAY_ENV, RELAY_SERVICE, relayAdmin, relayResolve } from './acceptance.js';

/** Every long-running service but the API, which waits for its key (as native does). */
export const STACK_WITHOUT_API: readonly string[] = Object.freeze(['kong-database', 'kong-migrations', 'kong-migrations-up', 'kong-migrations-finish', 'kong', 'hapi-database', 'hapi-pidns', 'hapi', 'hapi-watchdog', 'fhir-door']);

/** The API container starts only once the hospital has created its key and named the platform. */
export function apiReady(dir: string): boolean {
  return missingApiSettings(dir).length === 0;
}

export interface DockerRuntimeOptions {
  waitTimeoutMs?: number;
  pollMs?: number;
  /** The docker and Compose programs; found on PATH when absent (tests pass their own). */
  binaries?: Partial<DockerBinaries>;
  /** Progress of pulls and builds; default: stderr. */
  onProgress?: (line: string) => void;
  /** The acceptance relay's socket (acceptance.ts); default: $HOSPITAL_API_ACCEPTANCE_RELAY, set only in the acceptance service. */
  relaySocket?: string;
}

/** A host address to reach a port published on `bind`, as a URL's host (an IPv6 address in brackets). */
function reach(bind: string): string {
  const address = hostAddressOf(bind);
  return address.includes(':') ? `[${address}]` : address;
}

async function answers(url: string, expectBody?: string): Promise<boolean> {
  try {
    const res = await request(url, { headersTimeout: 5000, bodyTimeout: 5000 });
    const text = await res.body.text();
    return res.statusCode === 200 && (expectBody === undefined || text.trim() === expectBody);
  } catch {
    return false;
  }
}

export function createDockerRuntime(dir: string, config: InstallConfig, options: DockerRuntimeOptions = {}): Runtime {
  const runtime = hostDockerRuntime(dir, config, options);
  const relay = options.relaySocket ?? process.env[RELAY_ENV];
  return relay ? insideAcceptance(runtime, relay, config) : runtime;
}

/**
 * The runtime as the acceptance service sees it (acceptance.ts): no engine socket, so the admin API and
 * the gateway's name resolution go through the relay in Kong's network namespace, the FHIR server's
 * addresses are resolved there too (the names Kong reaches it by), and the components' state comes from
 * their answers. Everything else (probes, files, versions from install.json) is as on the host.
 */
function insideAcceptance(host: Runtime, relay: string, config: InstallConfig): Runtime {
  const settings = settingsOf(config);
  const fhirUrl = `http://${reach(settings.fhirBindAddress)}:${config.ports.fhir}/fhir/metadata`;
  const apiHealthUrl = `http://${reach(settings.bindAddress)}:${config.ports.api}/api/health-check`;
  const admin = (method: Parameters<Runtime['admin']>[0], path: string, body?: unknown): Promise<AdminResponse> => relayAdmin(relay, method, path, body);
  return {
    ...host,
    admin,
    gatewayResolve: (hosts) => relayResolve(relay, hosts),
    async fhirListeners() {
      const found = await relayResolve(relay, FHIR_SERVICES);
      const attached = FHIR_SERVICES.map((service) => {
        const r = found.get(service);
        return { service, addresses: r && 'addresses' in r ? r.addresses : [] };
      });
      return containerFhirListeners(attached, { bind: settings.fhirBindAddress, port: config.ports.fhir });
    },
    components: () => insideComponents({ admin, answers, apiHealthUrl, fhirUrl }),
    // the images install.json names (a digest only where it pins one: the rest is the engine's to tell)
    async versions(): Promise<ComponentVersion[]> {
      const images: Array<[string, string]> = [['kong', settings.images.kong], ['hapi', settings.images.hapi], ['kong-database', settings.images.postgres], ['hapi-database', settings.images.postgres], ['hospital-api', settings.images.api ?? builtApiImage(config.toolkitVersion)]];
      return images.map(([name, ref]) => referenceVersion(name, ref));
    },
  };
}

function hostDockerRuntime(dir: string, config: InstallConfig, options: DockerRuntimeOptions = {}): Runtime {
  const project = projectName(dir);
  const settings = settingsOf(config);
  const waitTimeoutMs = options.waitTimeoutMs ?? 600_000;
  const pollMs = options.pollMs ?? 2000;
  const docker = options.binaries?.docker ?? 'docker';
  const progress = options.onProgress ?? ((line: string) => process.stderr.write(`  ${line}\n`));
  const fhirUrl = `http://${reach(settings.fhirBindAddress)}:${config.ports.fhir}/fhir/metadata`;
  const apiHealthUrl = `http://${reach(settings.bindAddress)}:${config.ports.api}/api/health-check`;

  let cliPromise: Promise<DockerCli> | null = null;
  const cli = (): Promise<DockerCli> => {
    cliPromise ??= (async () => {
      const composeArgv = options.binaries?.compose ?? (await requireCompose(docker)).argv;
      return dockerCli(project, composeFile(dir), { docker, compose: composeArgv });
    })();
    return cliPromise;
  };

  /**
   * Before any container starts: a port the project publishes that another program or container holds
   * (its own service not running) is named with its service and install flag, and nothing is started
   * (issue 48: Compose found it only at kong's start, minutes in, and left the rest running).
   */
  const refuseTakenPorts = async (): Promise<void> => {
    const running = new Set((await containers()).filter((x) => x.State?.Running).map(serviceOf));
    for (const p of publishedPorts(config)) {
      if (running.has(p.service) || (await isPortFree(p.port, p.host))) continue;
      throw new HospitalApiError('ERR_INSTALL_DOCKER_PORT_TAKEN', {
        command: 'compose up',
        detail: `${p.host.includes(':') ? `[${p.host}]` : p.host}:${p.port}, which ${p.service} publishes (${p.flag}), is in use by another program or container; nothing was started`,
      });
    }
  };

  /** The project's networks that still have containers attached, and those containers' names. */
  const foreignAttachments = async (c: DockerCli): Promise<Array<{ network: string; containers: string[] }>> => {
    const ids = (await c.run(['network', 'ls', '-q', '--filter', `label=com.docker.compose.project=${project}`])).stdout.split('\n').map((x) => x.trim()).filter(Boolean);
    if (ids.length === 0) return [];
    const nets = JSON.parse((await c.run(['network', 'inspect', ...ids])).stdout) as Array<{ Name: string; Containers?: Record<string, { Name?: string }> }>;
    return nets
      .map((n) => ({ network: n.Name, containers: Object.values(n.Containers ?? {}).map((x) => x.Name ?? '?') }))
      .filter((n) => n.containers.length > 0);
  };

  /** The project's containers (one-off `run` containers excluded), as `docker inspect` prints them. */
  const containers = async (): Promise<Array<ContainerInspect & { Args?: string[] }>> => {
    const c = await cli();
    const ids = (await c.run(['ps', '-aq', '--filter', `label=com.docker.compose.project=${project}`])).stdout.split('\n').map((s) => s.trim()).filter(Boolean);
    if (ids.length === 0) return [];
    const list = JSON.parse((await c.run(['inspect', ...ids])).stdout) as Array<ContainerInspect & { Args?: string[] }>;
    return list.filter((x) => x.Config?.Labels?.['com.docker.compose.oneoff'] !== 'True');
  };

  const components = async (): Promise<ComponentState[]> => componentsFromInspect(await containers());

  /** The running kong container's id: admin calls and name resolution run inside it. */
  const runningKong = async (): Promise<string> => {
    const kong = (await containers()).find((x) => serviceOf(x) === 'kong' && x.State?.Running);
    if (!kong) throw new HospitalApiError('ERR_INSTALL_ADMIN_UNREACHABLE', { detail: 'the kong container is not running (`hospital-api up`)' });
    return kong.Id;
  };

  const waitReady = async (services: readonly string[] | null, what: { fhir: boolean; api: boolean }): Promise<void> => {
    const deadline = Date.now() + waitTimeoutMs;
    for (;;) {
      const list = (await components()).filter((c) => (services ? services.includes(c.name) : true));
      const up = list.length > 0 && list.every((c) => c.state === 'up');
      const ready = up && (!what.fhir || (await answers(fhirUrl))) && (!what.api || (await answers(apiHealthUrl, '{}')));
      if (ready) return;
      if (Date.now() > deadline) {
        const waiting = list.filter((c) => c.state !== 'up').map((c) => `${c.name} (${c.detail})`);
        throw new HospitalApiError('ERR_INSTALL_HEALTH_TIMEOUT', {
          seconds: Math.round(waitTimeoutMs / 1000),
          what: waiting.length ? waiting.join(', ') : [what.fhir ? 'HAPI FHIR /fhir/metadata' : '', what.api ? 'the Hospital API health check' : ''].filter(Boolean).join(' and '),
        });
      }
      await sleep(pollMs);
    }
  };

  const longRunning = (withApi: boolean): string[] => ['fhir-door', 'hapi', 'hapi-database', 'hapi-pidns', 'hapi-watchdog', 'kong', 'kong-database', ...(withApi ? ['hospital-api'] : [])];

  /**
   * hapi-watchdog runs the API's image before the API itself starts: when that image
   * is built here (no --api-image), build it first if it is not there yet, or
   * Compose would look for it in a registry.
   */
  const ensureApiImage = async (c: DockerCli): Promise<void> => {
    if (settings.images.api) return;
    const present = await c.run(['image', 'inspect', '--format', '{{.Id}}', builtApiImage(config.toolkitVersion)], { allowFail: true });
    if (present.exitCode === 0) return;
    progress(`building ${builtApiImage(config.toolkitVersion)} (the API and hapi-watchdog run it)`);
    await c.compose(['build', SERVICE_OF.api], { timeoutMs: null, onProgress: progress });
  };

  /** Recreates hapi and hapi-watchdog when they joined an older hapi-pidns (parse.ts stalePidJoins). */
  const rejoinPidNamespace = async (c: DockerCli): Promise<void> => {
    const stale = stalePidJoins(await containers());
    if (stale.length === 0) return;
    progress(`recreating ${stale.join(' and ')}: joined a hapi-pidns container that is gone`);
    await c.compose(['up', '-d', '--no-deps', '--force-recreate', ...stale], { timeoutMs: null, onProgress: progress });
  };

  /**
   * Scheduled acceptance (acceptance.ts): its two services, once the API answers (a run before would
   * only record that it does not), when install.json asks for them; the relay recreated when it joined
   * a kong container that is gone (parse.ts staleNetworkJoins).
   */
  const startAcceptance = async (c: DockerCli): Promise<void> => {
    if (!config.verifyEvery || !apiReady(dir)) return;
    await c.compose(['up', '-d', '--no-deps', RELAY_SERVICE, ACCEPTANCE_SERVICE], { timeoutMs: null, onProgress: progress });
    const stale = staleNetworkJoins(await containers(), SERVICE_OF.gateway, [RELAY_SERVICE]);
    if (stale.length === 0) return;
    progress(`recreating ${stale.join(' and ')}: joined a kong container that is gone`);
    await c.compose(['up', '-d', '--no-deps', '--force-recreate', ...stale], { timeoutMs: null, onProgress: progress });
  };

  const startApi = async (c: DockerCli): Promise<void> => {
    const build = settings.images.api ? [] : ['--build'];
    await c.compose(['up', '-d', '--no-deps', '--force-recreate', ...build, SERVICE_OF.api], { timeoutMs: null, onProgress: progress });
    await waitReady([SERVICE_OF.api], { fhir: false, api: true });
  };

  const dayTwo: DayTwoContext = {
    dir, project, docker, cli, containers,
    waitHealthy: (services) => waitReady(services, { fhir: false, api: false }),
    writeFiles: async () => writeContainerFiles(dir, await resolveImageUsers(await cli(), dir, settings.images)),
  };

  return {
    name: 'docker',
    async up() {
      const c = await cli();
      await refuseTakenPorts();
      await pullMissingImages(c, imagesToPull(settings), progress);
      // an install made by an older toolkit gets this one's compose project (day two: the FHIR door in
      // HAPI's place, issue 24), rendered from its install.json as install would; unchanged, nothing is written
      if (writeIfChanged(composeFile(dir), renderCompose(dir, config)).change === 'updated') progress(`${composeFile(dir)} rewritten from this toolkit's template`);
      writeContainerFiles(dir, await resolveImageUsers(c, dir, settings.images));
      await refuseStaleVolumes(c, dir, project, { waitReady: () => waitReady(['hapi-database', 'kong-database'], { fhir: false, api: false }) });
      const withApi = apiReady(dir);
      const build = withApi && !settings.images.api ? ['--build'] : [];
      await ensureApiImage(c);
      // a demo install's project has the platform stand-in too (demo-platform.ts)
      const demo = config.demo ? [DEMO_PLATFORM.service] : [];
      await c.compose(['up', '-d', '--remove-orphans', ...build, ...STACK_WITHOUT_API, ...demo, ...(withApi ? [SERVICE_OF.api] : [])], {
        timeoutMs: null,
        onProgress: progress,
      });
      await rejoinPidNamespace(c);
      await waitReady(longRunning(withApi), { fhir: true, api: withApi });
      await startAcceptance(c);
    },
    async down() {
      const c = await cli();
      const res = await c.compose(['down'], { timeoutMs: null, allowFail: true });
      if (res.exitCode === 0) return;
      // Every container of the project is gone and only its network stays, because a container that is not
      // the project's is attached to it (the engine refuses to remove a network with active endpoints):
      // the stack is down. The network is left to its owner, named, never cut from under it (issue 48).
      if (res.stderr.toLowerCase().includes('active endpoints') && (await containers()).length === 0) {
        for (const kept of await foreignAttachments(c)) {
          progress(`the stack is stopped; network ${kept.network} stays because ${kept.containers.join(', ')} (not part of this installation) is attached to it: \`docker network disconnect ${kept.network} <container>\`, then \`hospital-api down\` removes it`);
        }
        return;
      }
      throw new HospitalApiError(dockerFailureCode(res.stderr), { command: 'compose down', detail: res.stderr.trim().split('\n').slice(-3).join(' ') || `exit code ${res.exitCode}` });
    },
    async restart(component) {
      const c = await cli();
      const service = (SERVICE_OF as Readonly<Record<string, string>>)[component] ?? component;
      writeContainerFiles(dir, await resolveImageUsers(c, dir, settings.images));
      if (service === SERVICE_OF.api) {
        // held back without its key and platform, as the native runtime does
        if (!apiReady(dir)) {
          await c.compose(['rm', '--stop', '--force', service]);
          return;
        }
        // recreate, not restart: the settings file is read on start; wait until it answers
        await startApi(c);
        await startAcceptance(c);
        return;
      }
      await c.compose(['up', '-d', '--no-deps', '--force-recreate', service], { timeoutMs: null, onProgress: progress });
      await rejoinPidNamespace(c);
      await waitReady([service], { fhir: service === 'hapi', api: false });
      if (service === SERVICE_OF.gateway) await startAcceptance(c);
    },
    components,
    async versions(): Promise<ComponentVersion[]> {
      const list = (await containers()).filter((x) => x.State?.Running);
      if (list.length === 0) return [];
      const c = await cli();
      const imageIds = [...new Set(list.map((x) => x.Image))];
      const images = JSON.parse((await c.run(['image', 'inspect', ...imageIds])).stdout) as ImageInspect[];
      return versionsFromInspect(list, images);
    },
    async admin(method, path, body): Promise<AdminResponse> {
      return adminCall(await cli(), await runningKong(), method, path, body);
    },
    gatewayResolve: async (hosts) => resolveInContainer(await cli(), await runningKong(), hosts),
    async fhirListeners() {
      const attached = (await containers())
        .filter((x) => FHIR_SERVICES.includes(serviceOf(x)) && x.State?.Running)
        .map((x) => ({ service: serviceOf(x), addresses: containerAddresses(x) }));
      return containerFhirListeners(attached, { bind: settings.fhirBindAddress, port: config.ports.fhir });
    },
    reloadApiKey: () => reloadDockerApiKey(dayTwo),
    reloadGatewayTls: () => reloadDockerGatewayTls(dayTwo),
    snapshotData: (into, log) => snapshotDockerData(dayTwo, into, log),
    restoreData: (from, parts) => restoreDockerData(dayTwo, from, parts, progress),
    logs: (options) => dockerLogs(cli, dockerAuditLog(installPaths(dir)), options, config.verifyEvery ? [ACCEPTANCE_SERVICE, RELAY_SERVICE] : []),
    // the engine restarts the containers (restart policies, health checks, hapi-watchdog)
    supervision: async () => ({ supervisor: null, summary: null }),
    async supervise() {
      throw new HospitalApiError('ERR_USAGE', { detail: 'the docker runtime is supervised by the Docker engine: run `hospital-api up`' });
    },
  };
}

/**
 * The Docker Swarm runtime (issue 29): the stack of templates/stack.yaml,
 * deployed from this host, a manager of the swarm (deploy.ts), its state read
 * from the manager (state.ts), and Kong's admin API reached inside the
 * kong-admin task.
 *
 * Admin calls: kong-admin is placed on the node labelled hospital-api.admin=true,
 * and up() puts that label on this node, the one the toolkit runs on. So the
 * kong-admin container is a container of this host's own engine, and the call runs
 * inside it with `docker exec` exactly as the docker runtime runs it inside its kong
 * container (docker/admin.ts): the admin API stays on 127.0.0.1 inside that task, is
 * never published, and no other node's engine needs to be reachable (a manager's CLI
 * cannot `docker exec` into another node's containers: exec is an engine call, not a
 * swarm one).
 *
 * Backup and restore run through the ops task on this node (day-two.ts); key rotation and
 * certificate renewal are deploys, since every secret is named by its content (key-reload.ts).
 */
import { HospitalApiError } from '../../errors/index.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import type { AdminResponse, ComponentState, ComponentVersion, Runtime } from '../types.js';
import { adminCall } from '../container/admin.js';
import { dockerCli } from '../container/compose.js';
import { SERVICE_OF } from '../container/services.js';
import { missingApiSettings } from '../../install-dir/api-settings.js';
import { projectName } from '../container/project.js';
import { restoreSwarmData, snapshotSwarmData, type SwarmDayTwo } from './day-two.js';
import { databaseEndpoint } from './databases.js';
import { reloadSwarmApiKey } from './key-reload.js';
import { swarmLogs } from './logs.js';
import { swarmFhirListeners } from './gateway-reach.js';
import { resolveInContainer } from '../container/gateway-reach.js';
import { GATEWAY_PROPAGATION_MS, ONE_SHOT_STACK_SERVICES, STACK_SERVICES, stackFile, type StackService } from './render.js';
import { componentsFromSwarm, nodesRunning, versionsFromSwarm, type NodeInspect } from './state.js';
import {
  deploy,
  deployedReplicas,
  labelledNodes,
  newRun,
  pruneSecrets,
  runningTaskHere,
  selfNode,
  serviceTasks,
  stackServices,
  swarmNodes,
  waitOneShot,
  waitGone,
  waitRolledOut,
  waitUp,
  type SwarmContext,
} from './deploy.js';

/** The API's tasks run only once the hospital has created its key and named the platform (as on the other runtimes). */
function apiReady(dir: string): boolean {
  return missingApiSettings(dir).length === 0;
}

export interface SwarmRuntimeOptions {
  waitTimeoutMs?: number;
  pollMs?: number;
  /** The docker program (tests name their own). */
  docker?: string;
  /** Progress lines; default: stderr. */
  onProgress?: (line: string) => void;
}

/** The long-running services this install deploys: a database the hospital runs elsewhere is not one. */
export function longRunningServices(config: InstallConfig): StackService[] {
  return STACK_SERVICES.filter((s) => !ONE_SHOT_STACK_SERVICES.includes(s))
    .filter((s) => !(s === 'kong-database' && !databaseEndpoint(config, 'kong').own))
    .filter((s) => !(s === 'hapi-database' && !databaseEndpoint(config, 'fhir').own));
}

export async function createSwarmRuntime(dir: string, config: InstallConfig, options: SwarmRuntimeOptions = {}): Promise<Runtime> {
  const stack = projectName(dir);
  const cli = dockerCli(stack, stackFile(dir), { docker: options.docker ?? 'docker', compose: [] });
  const ctx: SwarmContext = {
    dir,
    config,
    stack,
    cli,
    progress: options.onProgress ?? ((line: string) => process.stderr.write(`  ${line}\n`)),
    waitTimeoutMs: options.waitTimeoutMs ?? 600_000,
    pollMs: options.pollMs ?? 2000,
  };
  const expected = longRunningServices(config);
  const api = SERVICE_OF.api as StackService;

  const components = async (): Promise<ComponentState[]> => {
    const services = await stackServices(cli, stack);
    const [tasks, nodes] = await Promise.all([serviceTasks(cli, services), swarmNodes(cli)]);
    return componentsFromSwarm(stack, services, tasks, nodes, expected).map((c) =>
      // held back as on the other runtimes: deployed with no replica until the key and platform are set
      c.name === api && c.state === 'down' && !apiReady(dir) ? { ...c, detail: 'held back: FHIR_API_KEY or PLATFORM_API_URL not set (`hospital-api consumer create <name> --write-env`)' } : c,
    );
  };

  /** Deploys the stack as install.json asks (the API with no replica until it is ready) and waits for it. */
  const deployAll = async (since = new Date(Date.now() - 1000).toISOString(), labelled?: NodeInspect[], previous?: { text: string; since: string }): Promise<void> => {
    const nodes = labelled ?? (await labelledNodes(ctx));
    const withApi = apiReady(dir);
    await deploy(ctx, withApi ? {} : { scale: { [api]: 0 } }, nodes, previous);
    // a changed service (a new image, new settings) is replaced task by task: until its last task
    await waitRolledOut(ctx, since);
    await waitUp(ctx, components, expected.filter((s) => withApi || s !== api));
    // every task runs on the current secrets now
    await pruneSecrets(ctx);
  };

  const dayTwo: SwarmDayTwo = { ctx, docker: options.docker ?? 'docker', components, expected };

  /** The kong-admin task's container on this node: admin calls and name resolution run inside it. */
  const adminTask = async (): Promise<string> => {
    const id = await runningTaskHere(cli, stack, 'kong-admin');
    if (!id) {
      throw new HospitalApiError('ERR_INSTALL_ADMIN_UNREACHABLE', {
        detail: 'no kong-admin task runs on this node (the node labelled hospital-api.admin=true; `hospital-api up` on it)',
      });
    }
    return id;
  };

  return {
    name: 'swarm',
    async up() {
      const nodes = await labelledNodes(ctx);
      const now = deployedReplicas(stack, await stackServices(cli, stack));
      const withApi = apiReady(dir);
      // the manager's clock (this host's) a second early: an update either deploy starts is this start's
      const since = new Date(Date.now() - 1000).toISOString();
      // 1. Kong's migrations, with Kong as it runs now (not at all on a first deploy)
      const run = newRun();
      ctx.progress(`deploying stack ${stack}: databases, HAPI, the FHIR door; Kong's migrations (run ${run})`);
      const first = await deploy(ctx, { scale: { 'kong-migrations': 1, kong: now.kong ?? 0, 'kong-admin': now['kong-admin'] ?? 0, [api]: withApi ? (now[api] ?? 0) : 0 }, migrationsRun: run }, nodes);
      await waitOneShot(ctx, 'kong-migrations', run);
      // 2. everything as install.json asks, the services step 1 left otherwise; 3. each service at its count
      ctx.progress('migrations complete; starting Kong');
      await deployAll(since, nodes, { text: first, since });
    },
    async down() {
      await cli.run(['stack', 'rm', stack], { allowFail: true });
      // `docker stack rm` returns before the tasks have stopped and the network is gone; a deploy
      // meanwhile would find the old network still in use
      await waitGone(ctx);
    },
    async restart(component) {
      const service = ((SERVICE_OF as Readonly<Record<string, string>>)[component] ?? component) as StackService;
      if (!expected.includes(service)) throw new HospitalApiError('ERR_RUNTIME_UNKNOWN_COMPONENT', { component, known: expected.join(', ') });
      // the API reads its settings (a secret) when it starts: a new settings file is a new secret and a new deploy
      if (service === api) return deployAll();
      await cli.run(['service', 'update', '--force', '--detach', `${stack}_${service}`], { timeoutMs: null, onProgress: ctx.progress });
      await waitUp(ctx, components, [service]);
    },
    components,
    async versions(): Promise<ComponentVersion[]> {
      return versionsFromSwarm(stack, await stackServices(cli, stack));
    },
    async admin(method, path, body): Promise<AdminResponse> {
      return adminCall(cli, await adminTask(), method, path, body);
    },
    // kong-admin shares the overlay network, and so the names, of every gateway task
    gatewayResolve: async (hosts) => resolveInContainer(cli, await adminTask(), hosts),
    async fhirListeners() {
      const services = await stackServices(cli, stack);
      const [tasks, nodes, here] = await Promise.all([serviceTasks(cli, services), swarmNodes(cli), selfNode(cli)]);
      return swarmFhirListeners(stack, services, tasks, nodes, { port: config.ports.fhir, here });
    },
    // a new settings secret, every API task replaced onto it (key-reload.ts)
    reloadApiKey: () => reloadSwarmApiKey(dir, config, () => deployAll(), GATEWAY_PROPAGATION_MS),
    // the certificate and key are secrets named by their content: a deploy rolls every gateway task onto the new ones
    async reloadGatewayTls() {
      await deployAll();
      return { connections: 'each gateway task was replaced by one with it in turn (a rolling update): connections to a replaced task closed when it stopped' };
    },
    snapshotData: (into, log) => snapshotSwarmData(dayTwo, into, log),
    restoreData: (from, parts) => restoreSwarmData(dayTwo, from, parts, ctx.progress),
    logs: (o) => swarmLogs(cli, options.docker ?? 'docker', stack, expected, o),
    async gatewayNodes() {
      const services = await stackServices(cli, stack);
      const [tasks, nodes] = await Promise.all([serviceTasks(cli, services), swarmNodes(cli)]);
      return nodesRunning(stack, SERVICE_OF.gateway as StackService, services, tasks, nodes);
    },
    // each proxy reads kong-admin's changes from the database every KONG_DB_UPDATE_FREQUENCY s
    gatewayPropagationMs: GATEWAY_PROPAGATION_MS,
    // Swarm's orchestrator restarts and reschedules the tasks
    supervision: async () => ({ supervisor: null, summary: null }),
    async supervise() {
      throw new HospitalApiError('ERR_USAGE', { detail: 'the swarm runtime is supervised by Docker Swarm: run `hospital-api up`' });
    },
  };
}

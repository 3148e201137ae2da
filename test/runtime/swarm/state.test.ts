/**
 * The swarm runtime's reading of a deployed stack (state.ts) and its placement
 * labels (deploy.ts labelPlan), from Engine API objects shaped as `docker
 * service inspect`, `docker inspect` of a task and `docker node inspect` print
 * them (Docker Engine API v1.41). The tier (test/swarm-engine/stack.test.ts)
 * reads the same from a real swarm.
 */
import { describe, expect, it } from 'vitest';
import { componentsFromSwarm, nodeAddress, nodesRunning, oneShotOutcome, rolloutOf, versionsFromSwarm, type NodeInspect, type ServiceInspect, type TaskInspect } from '../../../src/runtime/swarm/state.js';
import { labelPlan, NODE_LABELS } from '../../../src/runtime/swarm/deploy.js';
import { longRunningServices } from '../../../src/runtime/swarm/index.js';
import { swarmLogs, withoutStackName } from '../../../src/runtime/swarm/logs.js';
import { AUDIT_LOG_COMPONENT } from '../../../src/runtime/types.js';
import type { DockerCli } from '../../../src/runtime/container/compose.js';
import { HospitalApiError } from '../../../src/errors/index.js';
import { swarmSettings } from '../../../src/runtime/swarm/settings.js';
import type { RuntimeFlags } from '../../../src/runtime/profile.js';
import { installConfig } from '../../helpers/install-config.js';
import { withDatabaseCa } from '../../helpers/database-ca.js';

const STACK = 'hospital-api-0123abcd';

function service(name: string, replicas: number, image = 'hospital-api-tier/kong:3.9.3-standin', ports: number[] = []): ServiceInspect {
  return {
    ID: `svc-${name}`,
    Spec: {
      Name: `${STACK}_${name}`,
      Labels: { 'com.docker.stack.namespace': STACK },
      TaskTemplate: { ContainerSpec: { Image: image } },
      Mode: { Replicated: { Replicas: replicas } },
      EndpointSpec: { Mode: 'dnsrr', Ports: ports.map((p) => ({ TargetPort: 8443, PublishedPort: p, PublishMode: 'host' })) },
    },
  };
}

function task(name: string, node: string, state: string, desired = 'running', extra: Partial<TaskInspect> = {}): TaskInspect {
  return { ID: `t-${name}-${node}-${state}`, ServiceID: `svc-${name}`, NodeID: node, DesiredState: desired, Status: { State: state, Timestamp: '2026-11-26T22:00:00Z' }, ...extra };
}

const nodes: NodeInspect[] = ['n1', 'n2', 'n3'].map((h, i) => ({
  ID: `id-${h}`,
  Description: { Hostname: h },
  Status: { State: 'ready', Addr: i === 0 ? '0.0.0.0' : `198.51.100.1${i + 1}` },
  Spec: { Availability: 'active', Labels: {} },
  ...(i === 0 ? { ManagerStatus: { Addr: '198.51.100.11:2377', Leader: true } } : {}),
}));

function config(flags: RuntimeFlags = {}) {
  return installConfig({ runtime: 'swarm', swarm: swarmSettings(undefined, withDatabaseCa(flags)) });
}

describe('components of a deployed stack', () => {
  const expected = longRunningServices(config());
  const at = Date.parse('2026-11-26T22:01:00Z');

  it('a service is up only with every desired task running, and says where they run', () => {
    const services = [service('kong', 2, undefined, [8443]), service('hapi', 2, 'hospital-api-tier/hapi:v8')];
    const tasks = [
      task('kong', 'id-n2', 'running'),
      task('kong', 'id-n3', 'running'),
      // a replaced task of the past: not counted
      task('kong', 'id-n1', 'failed', 'shutdown'),
      task('hapi', 'id-n1', 'running'),
      task('hapi', 'id-n2', 'starting'),
    ];
    const list = componentsFromSwarm(STACK, services, tasks, nodes, expected, at);
    const kong = list.find((c) => c.name === 'kong')!;
    expect(kong).toMatchObject({ state: 'up', detail: '2/2 tasks running on n2, n3', ports: [8443], image: 'hospital-api-tier/kong', version: '3.9.3-standin', uptimeSeconds: 60 });
    expect(list.find((c) => c.name === 'hapi')).toMatchObject({ state: 'starting', detail: '1/2 tasks running on n1; a task starting' });
  });

  it('a missing task with no replacement on its way is down, with its error; an undeployed service and one at 0 replicas are down', () => {
    const tasks = [task('hapi', 'id-n1', 'running'), { ...task('hapi', 'id-n2', 'rejected'), Status: { State: 'rejected', Err: 'no suitable node' } }];
    const list = componentsFromSwarm(STACK, [service('hapi', 2), service('hospital-api', 0)], tasks, nodes, expected, at);
    expect(list.find((c) => c.name === 'hapi')).toMatchObject({ state: 'down', detail: '1/2 tasks running on n1; a task rejected: no suitable node' });
    expect(list.find((c) => c.name === 'hospital-api')).toMatchObject({ state: 'down', detail: 'no replica deployed' });
    expect(list.find((c) => c.name === 'kong')).toEqual({ name: 'kong', state: 'down', detail: 'not deployed' });
  });

  it("lists every long-running service of the install in name order, never the one-shot migrations or another stack's services", () => {
    const other = { ...service('kong', 1), ID: 'other', Spec: { ...service('kong', 1).Spec, Name: 'other-stack_kong' } };
    const list = componentsFromSwarm(STACK, [service('kong-migrations', 1), other], [], nodes, expected, at);
    expect(list.map((c) => c.name)).toEqual(['fhir-door', 'hapi', 'hapi-database', 'hospital-api', 'kong', 'kong-admin', 'kong-database', 'ops']);
    // a database the hospital runs elsewhere is not the stack's
    expect(longRunningServices(config({ kongDatabaseUrl: 'postgres://kong@db.example/kong' }))).not.toContain('kong-database');
  });

  it('versions: image, tag and a pinned digest per service', () => {
    const pinned = service('kong', 1, 'kong:3.9.3@sha256:' + 'a'.repeat(64));
    expect(versionsFromSwarm(STACK, [pinned, service('hapi', 1, 'hapiproject/hapi:v8.10.0-3'), service('kong-migrations', 0)])).toEqual([
      { name: 'hapi', version: 'v8.10.0-3', image: 'hapiproject/hapi', tag: 'v8.10.0-3', digest: null },
      { name: 'kong', version: '3.9.3', image: 'kong', tag: '3.9.3', digest: 'sha256:' + 'a'.repeat(64) },
    ]);
  });

  it('the gateway nodes: where a task runs that Swarm keeps, not one it is stopping (a rolling update)', () => {
    const tasks = [task('kong', 'id-n2', 'running'), task('kong', 'id-n1', 'running', 'shutdown'), task('kong', 'id-n3', 'starting')];
    expect(nodesRunning(STACK, 'kong', [service('kong', 2)], tasks, nodes)).toEqual([{ node: 'n2', address: '198.51.100.12' }]);
    expect(nodesRunning(STACK, 'kong', [], tasks, nodes)).toEqual([]);
    // a node that reports no address is kept, with none: the checks of it then fail instead of skipping it
    const silent = nodes.map((n) => (n.ID === 'id-n2' ? { ...n, Status: { State: 'ready' } } : n));
    expect(nodesRunning(STACK, 'kong', [service('kong', 2)], tasks, silent)).toEqual([{ node: 'n2', address: null }]);
  });

  it("a node's address: its own, else the manager's advertised one", () => {
    expect(nodes.map(nodeAddress)).toEqual(['198.51.100.11', '198.51.100.12', '198.51.100.13']);
  });
});

describe('one run of the migrations', () => {
  const env = (run: string) => ({ Spec: { ContainerSpec: { Env: ['KONG_DATABASE=postgres', `HOSPITAL_API_RUN=${run}`] } } });

  it('is done when a task of that run completed; failures of that run are counted, other runs ignored', () => {
    const tasks = [
      task('kong-migrations', 'id-n1', 'complete', 'shutdown', env('old')),
      { ...task('kong-migrations', 'id-n2', 'failed', 'shutdown', env('new')), Status: { State: 'failed', Err: 'task: non-zero exit (1)', Timestamp: '2026-11-26T22:00:01Z' } },
    ];
    expect(oneShotOutcome(tasks, 'svc-kong-migrations', 'HOSPITAL_API_RUN=new')).toEqual({ done: false, failures: 1, lastError: 'task: non-zero exit (1)' });
    tasks.push(task('kong-migrations', 'id-n3', 'complete', 'running', env('new')));
    expect(oneShotOutcome(tasks, 'svc-kong-migrations', 'HOSPITAL_API_RUN=new').done).toBe(true);
  });
});

describe('the rolling updates of a deploy', () => {
  const since = '2026-11-26T23:00:00.000Z';
  const withImage = (svc: ServiceInspect, image: string): ServiceInspect => ({ ...svc, Spec: { ...svc.Spec, TaskTemplate: { ContainerSpec: { Image: image, Secrets: [{ SecretName: 'env-b' }] } } } });
  const api = withImage(service('hospital-api', 2), 'api:2');
  const runningTask = (slot: string, image: string, secret: string, desired = 'running'): TaskInspect =>
    task('hospital-api', slot, 'running', desired, { Spec: { ContainerSpec: { Image: image, Secrets: [{ SecretName: secret }] } } });

  it('waits while a task meant to run has an older image or secret than the service, whatever UpdateStatus says', () => {
    // a stack deploy that changed nothing resets UpdateStatus: none, while the earlier phase's roll goes on
    expect(rolloutOf(STACK, [api], [runningTask('n1', 'api:1', 'env-b'), runningTask('n2', 'api:2', 'env-b')], since)).toEqual({
      rolling: ['hospital-api'],
      where: ['hospital-api (1 of 2 on the new spec running, 1 on the old)'],
      failed: [],
    });
    expect(rolloutOf(STACK, [api], [runningTask('n1', 'api:2', 'env-a'), runningTask('n2', 'api:2', 'env-b')], since).rolling).toEqual(['hospital-api']);
    // the old tasks shut down, the new ones meant to run: done
    expect(rolloutOf(STACK, [api], [runningTask('n1', 'api:1', 'env-b', 'shutdown'), runningTask('n1', 'api:2', 'env-b'), runningTask('n2', 'api:2', 'env-b')], since)).toEqual({ rolling: [], where: [], failed: [] });
  });

  it("says where a roll stands: Swarm's update state and why a new task does not run, in Swarm's words", () => {
    const pending: TaskInspect = {
      ...task('hospital-api', 'n3', 'pending', 'running', { Spec: { ContainerSpec: { Image: 'api:2', Secrets: [{ SecretName: 'env-b' }] } } }),
      Status: { State: 'pending', Message: 'pending task scheduling', Err: 'no suitable node (host-mode port already in use on 2 nodes)' },
    };
    const updating = { ...api, UpdateStatus: { State: 'updating', StartedAt: '2026-11-26T23:00:01Z', Message: 'update in progress' } };
    expect(rolloutOf(STACK, [updating], [runningTask('n1', 'api:1', 'env-b'), runningTask('n2', 'api:2', 'env-b'), pending], since).where).toEqual([
      'hospital-api (update updating: update in progress; 1 of 2 on the new spec running, 1 on the old; a new task pending: no suitable node (host-mode port already in use on 2 nodes))',
    ]);
  });

  it("waits for this deploy's update Swarm says is under way (nanosecond times included), not an earlier deploy's", () => {
    const under = (State: string, StartedAt: string) => ({ ...api, UpdateStatus: { State, StartedAt } });
    const done = [runningTask('n1', 'api:2', 'env-b')];
    expect(rolloutOf(STACK, [under('updating', '2026-11-26T23:00:01.123456789Z')], done, since).rolling).toEqual(['hospital-api']);
    expect(rolloutOf(STACK, [under('rollback_started', '2026-11-26T23:00:01Z')], done, since).rolling).toEqual(['hospital-api']);
    expect(rolloutOf(STACK, [under('updating', '2026-11-26T22:59:59.999999999Z')], done, since).rolling).toEqual([]);
    expect(rolloutOf(STACK, [under('completed', '2026-11-26T23:00:01Z')], done, since)).toEqual({ rolling: [], where: [], failed: [] });
  });

  it("names this deploy's update Swarm rolled back or paused, with its message, and not an earlier one", () => {
    const r = rolloutOf(STACK, [
      { ...api, UpdateStatus: { State: 'rollback_completed', StartedAt: '2026-11-26T23:00:05Z', Message: 'rollback completed' } },
      { ...withImage(service('kong', 2), 'kong:2'), UpdateStatus: { State: 'paused', StartedAt: '2026-11-26T23:00:05Z', Message: 'update paused due to failure' } },
      { ...withImage(service('hapi', 2), 'hapi:2'), UpdateStatus: { State: 'rollback_completed', StartedAt: '2026-11-26T22:00:00Z' } },
    ], [], since);
    expect(r).toEqual({
      rolling: [],
      where: [],
      failed: [
        { service: 'hospital-api', state: 'rollback_completed', message: 'rollback completed' },
        { service: 'kong', state: 'paused', message: 'update paused due to failure' },
      ],
    });
  });
});

describe('placement labels', () => {
  const labelled = (labels: Record<string, Record<string, string>>): NodeInspect[] => nodes.map((n) => ({ ...n, Spec: { ...n.Spec, Labels: labels[n.Description!.Hostname!] ?? {} } }));

  it('puts the admin label and both databases on this node on a first start', () => {
    expect(labelPlan(config(), nodes, 'id-n2')).toEqual({
      add: [['id-n2', NODE_LABELS.admin], ['id-n2', NODE_LABELS.kong], ['id-n2', NODE_LABELS.fhir]],
      remove: [],
    });
  });

  it('moves the admin label to this node, leaves a database where it is, and puts one on the node it is told', () => {
    const now = labelled({ n1: { [NODE_LABELS.admin]: 'true', [NODE_LABELS.kong]: 'true' } });
    expect(labelPlan(config({ fhirDatabaseNode: 'n3' }), now, 'id-n2')).toEqual({
      add: [['id-n2', NODE_LABELS.admin], ['id-n3', NODE_LABELS.fhir]],
      remove: [['id-n1', NODE_LABELS.admin]],
    });
    // nothing to do when every label is where it belongs
    expect(labelPlan(config(), now, 'id-n1')).toEqual({ add: [['id-n1', NODE_LABELS.fhir]], remove: [] });
  });

  it('refuses to move a database away from the node that holds its data, and a node that does not exist', () => {
    const now = labelled({ n1: { [NODE_LABELS.kong]: 'true' } });
    expect(() => labelPlan(config({ kongDatabaseNode: 'n2' }), now, 'id-n1')).toThrow(expect.objectContaining({ code: 'ERR_INSTALL_BAD_OPTION', message: expect.stringContaining('runs on n1') }));
    expect(() => labelPlan(config({ kongDatabaseNode: 'n9' }), nodes, 'id-n1')).toThrow(expect.objectContaining({ code: 'ERR_INSTALL_BAD_OPTION', message: expect.stringContaining('"n9"') }));
    // a database outside the swarm needs no label
    expect(labelPlan(config({ kongDatabaseUrl: 'postgres://kong@db.example/kong', fhirDatabaseUrl: 'postgres://hapi@db.example/hapi' }), nodes, 'id-n1')).toEqual({ add: [['id-n1', NODE_LABELS.admin]], remove: [] });
  });
});

describe('log lines', () => {
  it("keep which replica on which node wrote them, less the stack's name; other lines stay as they are", () => {
    const text = `${STACK}_kong.1@n2    | kong stand-in 3.9.3\n${STACK}_kong.2@n3    | hospital-api gateway ready\nerror from the CLI\n`;
    expect(withoutStackName(STACK, text)).toBe('kong.1@n2 | kong stand-in 3.9.3\nkong.2@n3 | hospital-api gateway ready\nerror from the CLI\n');
  });

  it('of the audit log are on each API node: `logs audit` names its volume and asks docker nothing', async () => {
    const asked: string[][] = [];
    const cli = { run: async (args: string[]) => (asked.push(args), { stdout: '', stderr: '', exitCode: 0 }) } as unknown as DockerCli;
    const options = { component: AUDIT_LOG_COMPONENT, lines: 10, follow: false, signal: new AbortController().signal, write: () => {} };
    const err = await swarmLogs(cli, 'docker', STACK, ['kong'], options).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(HospitalApiError);
    expect((err as HospitalApiError).code).toBe('ERR_USAGE');
    expect((err as HospitalApiError).message).toContain(`in its volume ${STACK}_api-audit`);
    expect(asked).toEqual([]);
  });
});

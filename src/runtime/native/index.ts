/**
 * The native runtime: the embedded FHIR server, gateway and Hospital API as
 * processes under one supervisor (see supervisor.ts), behind the same Runtime
 * interface as docker.
 */
import { request } from 'undici';
import { endpoints, type InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import type { AdminResponse, ComponentState, ComponentVersion, FhirListener, Runtime } from '../types.js';
import { hostListener, resolveHere } from '../gateway-reach.js';
import { HospitalApiError } from '../../errors/index.js';
import { componentSpecs } from './components.js';
import { requestRestart, startStack, stopStack } from './control.js';
import { componentHealth } from './health.js';
import { isOurs, readRunState, runningSupervisor } from './state.js';
import { reloadApiKey, reloadGatewayTls, restoreNativeData, snapshotNativeData } from './maintenance.js';
import { nativeLogs } from './logs.js';

/** Live view: the recorded state, checked against the process table and each health URL. */
export async function nativeComponents(dir: string, config: InstallConfig): Promise<ComponentState[]> {
  const specs = componentSpecs(dir, config);
  const state = runningSupervisor(dir);
  const recorded = state ? null : readRunState(dir);
  return Promise.all(
    specs.map(async (spec): Promise<ComponentState> => {
      const base = { name: spec.name, ports: spec.ports.map((p) => p.port), version: spec.version };
      const rec = state?.components.find((c) => c.name === spec.name);
      if (!state || !rec) {
        const orphan = recorded?.components.find((c) => c.name === spec.name && isOurs(c.pid, c.pidStart));
        if (orphan?.pid) {
          return { ...base, state: 'down', pid: orphan.pid, detail: `unsupervised: the supervisor is gone but pid ${orphan.pid} still runs (stop it with \`hospital-api down\`)` };
        }
        return { ...base, state: 'down', detail: spec.blocked ?? `not running (start it with \`hospital-api up --dir ${installPaths(dir).root}\`)` };
      }
      const extra = { restarts: rec.restarts, version: rec.version };
      if (!isOurs(rec.pid, rec.pidStart)) return { ...base, ...extra, state: rec.state === 'up' ? 'exited' : rec.state, detail: rec.detail };
      const uptimeSeconds = rec.startedAt ? Math.max(0, Math.round((Date.now() - Date.parse(rec.startedAt)) / 1000)) : undefined;
      const live = { ...base, ...extra, pid: rec.pid, ...(uptimeSeconds === undefined ? {} : { uptimeSeconds }) };
      // A generous time-out: a busy component (a big load) is still up.
      const health = await componentHealth(spec, 5_000);
      if (health) return { ...live, ...health };
      return { ...live, state: rec.state === 'up' ? 'starting' : rec.state, detail: `process alive but ${spec.healthUrl} does not answer` };
    }),
  );
}

/** The `status` line for a running built-in supervisor. */
export function supervisorSummary(s: { pid: number; startedAt: string }): string {
  return `supervisor pid ${s.pid}, started ${s.startedAt}`;
}

export function createNativeRuntime(dir: string, config: InstallConfig): Runtime {
  const root = installPaths(dir).root;
  return {
    name: 'native',
    async up() {
      await startStack(root, config);
    },
    async down() {
      await stopStack(root);
    },
    restart: (component) => requestRestart(root, component),
    components: () => nativeComponents(root, config),
    reloadApiKey: () => reloadApiKey(root),
    reloadGatewayTls: () => reloadGatewayTls(root),
    snapshotData: (into, progress) => snapshotNativeData(root, into, progress),
    restoreData: (from, parts) => restoreNativeData(root, from, parts),
    logs: (options) => nativeLogs(root, config, options),
    async supervision() {
      const state = runningSupervisor(root);
      const supervisor = state ? { pid: state.supervisorPid, startedAt: state.startedAt } : null;
      return { supervisor, summary: supervisor ? supervisorSummary(supervisor) : 'supervisor not running' };
    },
    async supervise() {
      // Loaded here only: the detached `up --foreground` is the one process that runs it.
      const { runSupervisor } = await import('./supervisor.js');
      return runSupervisor(root, config);
    },
    async versions(): Promise<ComponentVersion[]> {
      const recorded = readRunState(root)?.components ?? [];
      return componentSpecs(root, config).map((s) => ({
        name: s.name,
        version: recorded.find((c) => c.name === s.name)?.version ?? s.version,
      }));
    },
    // the gateway is a process on this host: it resolves names as this process does
    gatewayResolve: resolveHere,
    async fhirListeners(): Promise<FhirListener[]> {
      const fhir = componentSpecs(root, config).find((s) => s.name === 'fhir');
      return (fhir?.ports ?? []).map((p) => hostListener('FHIR server', p.host, p.port));
    },
    async admin(method, path, body): Promise<AdminResponse> {
      const url = endpoints(config).nativeAdmin + path;
      try {
        const res = await request(url, {
          method,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        const text = await res.body.text();
        let parsed: unknown = null;
        if (text) {
          try { parsed = JSON.parse(text); } catch { parsed = text; }
        }
        return { status: res.statusCode, body: parsed };
      } catch (err) {
        throw new HospitalApiError('ERR_RUNTIME_ADMIN_UNREACHABLE', { url, dir: root, detail: (err as Error).message }, { cause: err });
      }
    },
  };
}

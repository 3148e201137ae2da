/**
 * The native runtime when systemd runs it (install.json `"supervisor":
 * "systemd"`, set by `hospital-api systemd --managed`): the same components
 * and admin API as the built-in supervisor, but their state, restarts and
 * reloads go through systemctl, so `status`, `verify`, `consumer rotate-key`
 * and `cert renew` work the same under systemd.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { HospitalApiError } from '../errors/index.js';
import type { InstallConfig } from '../runtime/install-config.js';
import { installPaths } from '../runtime/layout.js';
import { componentSpecs } from '../runtime/native/components.js';
import { componentHealth } from '../runtime/native/health.js';
import { createNativeRuntime } from '../runtime/native/index.js';
import { reloadApiKeyOf } from '../runtime/native/maintenance.js';
import type { ComponentState, Runtime } from '../runtime/types.js';
import { TARGET, unitName } from './units.js';

const START_TIMEOUT_MS = 90_000;

interface UnitShow {
  MainPID: number;
  ActiveState: string;
  SubState: string;
  NRestarts: number;
}

async function systemctl(args: string[]): Promise<string> {
  // Loaded on first use: native commands under the built-in supervisor never need it.
  const { execa } = await import('execa');
  try {
    const r = await execa('systemctl', args, { timeout: 60_000, env: { SYSTEMD_PAGER: '', SYSTEMD_COLORS: '0' } });
    return r.stdout;
  } catch (err) {
    const e = err as { stderr?: string; shortMessage?: string };
    throw new HospitalApiError('ERR_RUNTIME_START_FAILED', { component: 'systemd', dir: '', detail: `systemctl ${args.join(' ')}: ${(e.stderr || e.shortMessage || String(err)).trim()}` }, { cause: err });
  }
}

/** `systemctl show -p …` of one unit (key=value lines). */
export async function showUnit(unit: string): Promise<UnitShow> {
  const text = await systemctl(['show', '-p', 'MainPID', '-p', 'ActiveState', '-p', 'SubState', '-p', 'NRestarts', unit]);
  const v: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) v[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return { MainPID: Number(v.MainPID ?? 0) || 0, ActiveState: v.ActiveState ?? 'unknown', SubState: v.SubState ?? '', NRestarts: Number(v.NRestarts ?? 0) || 0 };
}

export function createSystemdRuntime(dir: string, config: InstallConfig): Runtime {
  const root = installPaths(dir).root;
  const native = createNativeRuntime(root, config);
  const specs = () => componentSpecs(root, config).filter((s) => s.name !== 'platform');

  const components = (): Promise<ComponentState[]> =>
    Promise.all(
      specs().map(async (spec): Promise<ComponentState> => {
        const unit = unitName(spec.name);
        const s = await showUnit(unit);
        const base = { name: spec.name, ports: spec.ports.map((p) => p.port), version: spec.version, restarts: s.NRestarts, ...(s.MainPID ? { pid: s.MainPID } : {}) };
        const health = s.ActiveState === 'active' ? await componentHealth(spec, 5_000) : null;
        if (health) return { ...base, state: health.state, detail: `${unit} active; ${health.detail}` };
        if (s.ActiveState === 'active' || s.ActiveState === 'activating' || s.ActiveState === 'reloading') {
          return { ...base, state: s.SubState === 'auto-restart' ? 'restarting' : 'starting', detail: `${unit} ${s.ActiveState}/${s.SubState}; ${spec.healthUrl} does not answer yet` };
        }
        if (s.ActiveState === 'failed') return { ...base, state: 'exited', detail: `${unit} failed: \`journalctl -u ${unit}\`` };
        return { ...base, state: 'down', detail: spec.blocked ?? `${unit} ${s.ActiveState} (start it with \`systemctl start ${TARGET}\`)` };
      }),
    );

  const waitUp = async (names: string[]): Promise<void> => {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const now = (await components()).filter((c) => names.includes(c.name));
      // Started means answering; a degraded gateway (gateway-health.ts) answers, and status/verify say why.
      if (now.every((c) => c.state === 'up' || c.state === 'degraded')) return;
      if (Date.now() > deadline) {
        throw new HospitalApiError('ERR_RUNTIME_TIMEOUT', { seconds: START_TIMEOUT_MS / 1000, what: now.filter((c) => c.state !== 'up' && c.state !== 'degraded').map((c) => `${c.name} (${c.detail})`).join(', '), dir: root });
      }
      await sleep(250);
    }
  };

  const mainPid = async (component: string): Promise<number> => {
    const s = await showUnit(unitName(component));
    if (!s.MainPID || s.ActiveState !== 'active') {
      throw new HospitalApiError('ERR_RUNTIME_START_FAILED', { component, dir: root, detail: `${unitName(component)} is ${s.ActiveState}, not active` });
    }
    return s.MainPID;
  };

  return {
    name: 'native',
    async up() {
      await systemctl(['start', TARGET]);
      await waitUp(specs().filter((s) => !s.blocked).map((s) => s.name));
    },
    async down() {
      await systemctl(['stop', TARGET]);
    },
    async restart(component) {
      if (!specs().some((s) => s.name === component)) {
        throw new HospitalApiError('ERR_RUNTIME_UNKNOWN_COMPONENT', { component, known: specs().map((s) => s.name).join(', ') });
      }
      await systemctl(['restart', unitName(component)]);
      await waitUp([component]);
    },
    components,
    versions: () => native.versions(),
    admin: (method, path, body) => native.admin(method, path, body),
    reloadApiKey: async () => reloadApiKeyOf(root, await mainPid('api')),
    async reloadGatewayTls() {
      await mainPid('gateway');
      await systemctl(['reload', unitName('gateway')]); // ExecReload: SIGHUP
    },
    snapshotData: (into, progress) => native.snapshotData!(into, progress),
    restoreData: (from, parts) => native.restoreData!(from, parts),
  };
}

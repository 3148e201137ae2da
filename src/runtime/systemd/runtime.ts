/**
 * The native runtime when systemd runs it (install.json `"supervisor":
 * "systemd"`, set by `install --supervisor systemd`, the Debian package's default
 * where systemd runs, or by `hospital-api systemd --managed`): `up` writes the
 * units into /etc/systemd/system and enables them, then starts them; the same components
 * and admin API as the built-in supervisor, but their state, restarts and
 * reloads go through systemctl, so `status`, `verify`, `consumer rotate-key`
 * and `cert renew` work the same under systemd.
 */
import { existsSync, lchownSync, lstatSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeIfChanged } from '../../install-dir/write-if-changed.js';
import { HospitalApiError } from '../../errors/index.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { componentSpecs } from '../native/components.js';
import { componentHealth } from '../native/health.js';
import { createNativeRuntime, supervisorSummary } from '../native/index.js';
import { reloadApiKeyOf } from '../native/maintenance.js';
import { TLS_RELOADED_IN_PLACE, type ComponentState, type Runtime } from '../types.js';
import { ACCEPTANCE_UNITS, defaultUnitOptions, renderUnits, TARGET, unitName } from './units.js';

/** Where the units of an install go: systemd's directory for the administrator's units (systemd.unit(5)). */
const UNIT_DIR = '/etc/systemd/system';

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

/** uid and gid of a system user, by `id` (Node has no getpwnam). */
async function userIds(user: string): Promise<{ uid: number; gid: number }> {
  const { execa } = await import('execa');
  const [u, g] = await Promise.all([execa('id', ['-u', user], { reject: false }), execa('id', ['-g', user], { reject: false })]);
  if (u.exitCode !== 0 || g.exitCode !== 0) {
    throw new HospitalApiError('ERR_SYSTEMD_OPTIONS', { detail: `there is no system user ${user} to run the components (the Debian package makes it; else: useradd --system --user-group --shell /usr/sbin/nologin ${user})` });
  }
  return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/** Gives every file of the install directory to the service user (root's writes in a subfolder it made are root's). */
function chownTree(root: string, uid: number, gid: number): void {
  const fix = (p: string): void => {
    const s = lstatSync(p);
    if (s.uid !== uid || s.gid !== gid) lchownSync(p, uid, gid);
    if (s.isDirectory()) for (const e of readdirSync(p)) fix(join(p, e));
  };
  fix(root);
}

/**
 * The units of this install in UNIT_DIR, as `hospital-api systemd` renders them, the install directory
 * the service user's, and hospital-api.target enabled: what `up` needs before systemctl can start it.
 * A rerun with nothing changed writes nothing and reloads nothing.
 */
async function installUnits(root: string, config: InstallConfig): Promise<void> {
  // the user units written before name (`hospital-api systemd --user`) stays theirs
  const api = join(UNIT_DIR, unitName('api'));
  const before = existsSync(api) ? /^User=(.+)$/m.exec(readFileSync(api, 'utf8'))?.[1] : undefined;
  const options = defaultUnitOptions(before);
  if (process.getuid?.() === 0) {
    const { uid, gid } = await userIds(options.user);
    chownTree(root, uid, gid);
  }
  const units = renderUnits(root, config, options);
  const changed = units.map((u) => writeIfChanged(join(UNIT_DIR, u.name), u.text)).filter((f) => f.change !== 'unchanged');
  // `install --verify-every off`: the timer stops and its units go
  const dropped = [ACCEPTANCE_UNITS.timer, ACCEPTANCE_UNITS.service].filter((n) => !units.some((u) => u.name === n) && existsSync(join(UNIT_DIR, n)));
  if (dropped.length > 0) {
    await systemctl(['stop', ACCEPTANCE_UNITS.timer]).catch(() => undefined);
    for (const n of dropped) rmSync(join(UNIT_DIR, n), { force: true });
  }
  if (changed.length === 0 && dropped.length === 0) return;
  await systemctl(['daemon-reload']);
  await systemctl(['enable', TARGET]);
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
      await installUnits(root, config);
      // a unit that gave up (the API before its key exists: StartLimitBurst) starts again only once reset
      await systemctl(['reset-failed', ...specs().map((s) => unitName(s.name))]).catch(() => undefined);
      await systemctl(['start', TARGET]);
      await waitUp(specs().filter((s) => !s.blocked).map((s) => s.name));
    },
    async down() {
      // Each component's unit is named too: systemctl waits for the stop job of every unit it is given
      // (systemctl(1): without --no-block it "synchronously waits for the requested operation to
      // finish"), while the component units the target's stop pulls in by PartOf= are jobs it does not
      // wait for, so `down` returned with a component still deactivating (finishing its shutdown).
      await systemctl(['stop', TARGET, ...specs().map((s) => unitName(s.name))]);
    },
    async restart(component) {
      if (!specs().some((s) => s.name === component)) {
        throw new HospitalApiError('ERR_RUNTIME_UNKNOWN_COMPONENT', { component, known: specs().map((s) => s.name).join(', ') });
      }
      await systemctl(['reset-failed', unitName(component)]).catch(() => undefined);
      await systemctl(['restart', unitName(component)]);
      await waitUp([component]);
    },
    components,
    versions: () => native.versions(),
    admin: (method, path, body) => native.admin(method, path, body),
    gatewayResolve: (hosts) => native.gatewayResolve(hosts),
    fhirListeners: () => native.fhirListeners(),
    reloadApiKey: async () => reloadApiKeyOf(root, await mainPid('api')),
    async reloadGatewayTls() {
      await mainPid('gateway');
      await systemctl(['reload', unitName('gateway')]); // ExecReload: SIGHUP
      return TLS_RELOADED_IN_PLACE;
    },
    snapshotData: (into, progress) => native.snapshotData(into, progress),
    restoreData: (from, parts) => native.restoreData(from, parts),
    logs: (options) => native.logs(options),
    async supervision() {
      // a built-in supervisor started before `systemd --managed` still runs until `down`
      const { supervisor } = await native.supervision();
      return { supervisor, summary: supervisor ? supervisorSummary(supervisor) : `run by systemd (${TARGET})` };
    },
    supervise: () => native.supervise(),
  };
}

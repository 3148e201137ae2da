/**
 * systemd units for a production native install (issue 15): one service per
 * component, with the same command lines the built-in supervisor runs
 * (componentSpecs, so the two never drift), grouped by hospital-api.target.
 * Each runs as a dedicated system user with a restart policy, systemd's
 * sandboxing (systemd.exec(5): NoNewPrivileges, ProtectSystem=strict with
 * only the install directory writable, no capabilities unless a port is
 * below 1024) and its output in the journal. `systemctl reload` sends SIGHUP:
 * the API rereads its key, the gateway its certificate (consumer rotate-key,
 * cert renew).
 */
import { isAbsolute } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { BIN_PATH, COMPONENT_NODE_ARGS, componentSpecs, type ComponentSpec } from '../native/components.js';
import type { InstallConfig } from '../../install-dir/install-config.js';
import { installPaths } from '../../install-dir/layout.js';
import { profileOf } from '../profiles.js';

export const TARGET = 'hospital-api.target';

export interface UnitOptions {
  /** The system user (and group) the components run as. */
  user: string;
  /** Absolute path of the node executable. */
  node: string;
  /** Absolute path of bin/hospital-api.js. */
  bin: string;
}

export interface UnitFile {
  name: string;
  text: string;
}

const USER = /^[a-z_][a-z0-9_-]{0,31}$/;

export function unitName(component: string): string {
  return `hospital-api-${component}.service`;
}

/** systemd.syntax(7): quote an argument of ExecStart=; `%` and `$` are specifiers and variables. */
export function quoteArg(arg: string): string {
  if (/[\n\r]/.test(arg)) throw new HospitalApiError('ERR_SYSTEMD_OPTIONS', { detail: 'a command-line argument holds a line break' });
  const escaped = arg.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%').replace(/\$/g, '$$$$');
  return /^[A-Za-z0-9_./:@=,+-]+$/.test(escaped) ? escaped : `"${escaped}"`;
}

function underHome(path: string): boolean {
  return /^\/(home|root|run\/user)(\/|$)/.test(path);
}

/** PrivateTmp would hide an install (or the toolkit) that lives under /tmp. */
function underTmp(path: string): boolean {
  return /^\/(var\/)?tmp(\/|$)/.test(path);
}

/** What a unit runs: a component's spec, or the scheduled acceptance run (a one-shot). */
type ServiceSpec = Pick<ComponentSpec, 'args' | 'ports' | 'env'> & { name: string };

function service(spec: ServiceSpec, dir: string, o: UnitOptions, after: string[], oneshot = false): string {
  const root = installPaths(dir).root;
  const lowPort = spec.ports.some((p) => p.port < 1024);
  const exec = [o.node, ...COMPONENT_NODE_ARGS, o.bin, ...spec.args].map(quoteArg).join(' ');
  const env = { NO_COLOR: '1', ...spec.env };
  const lines = [
    '# Written by `hospital-api systemd`; regenerate rather than edit (same command line as `hospital-api up`).',
    '[Unit]',
    `Description=hospital-api ${spec.name} (${root.replace(/%/g, '%%')})`,
    'After=network-online.target' + after.map((a) => ` ${a}`).join(''),
    'Wants=network-online.target',
    `PartOf=${TARGET}`,
    // a toolkit removed (`apt remove` keeps the installation and these units) starts nothing at boot
    `ConditionPathExists=${o.node.replace(/%/g, '%%')}`,
    'StartLimitIntervalSec=300',
    'StartLimitBurst=10',
    '',
    '[Service]',
    // the scheduled acceptance run: started by its timer, done when verify exits
    ...(oneshot ? ['Type=oneshot', 'TimeoutStartSec=15min'] : ['Type=exec']),
    `User=${o.user}`,
    `Group=${o.user}`,
    // A single path: taken to the end of the line, unquoted; only specifiers need escaping.
    `WorkingDirectory=${root.replace(/%/g, '%%')}`,
    ...Object.entries(env).map(([k, v]) => `Environment=${quoteArg(`${k}=${v}`)}`),
    `ExecStart=${exec}`,
    ...(spec.name === 'api' || spec.name === 'gateway' ? ['ExecReload=/bin/kill -HUP $MAINPID'] : []),
    ...(oneshot ? [] : ['Restart=always', 'RestartSec=2s']),
    'TimeoutStopSec=15s',
    'KillMode=mixed',
    'StandardOutput=journal',
    'StandardError=journal',
    `SyslogIdentifier=hospital-api-${spec.name}`,
    'UMask=0077',
    '# Hardening (systemd.exec(5)). No MemoryDenyWriteExecute: the V8 JIT needs it.',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    `ReadWritePaths=${quoteArg(root)}`,
    `ProtectHome=${underHome(root) || underHome(o.node) || underHome(o.bin) ? 'read-only' : 'yes'}`,
    ...(underTmp(root) || underTmp(o.bin) || underTmp(o.node) ? ['# PrivateTmp=no: the install directory or the toolkit lives under /tmp (move it for production)', 'PrivateTmp=no'] : ['PrivateTmp=yes']),
    'PrivateDevices=yes',
    'ProtectKernelTunables=yes',
    'ProtectKernelModules=yes',
    'ProtectKernelLogs=yes',
    'ProtectControlGroups=yes',
    'ProtectClock=yes',
    'ProtectHostname=yes',
    'ProtectProc=invisible',
    'RestrictSUIDSGID=yes',
    'RestrictNamespaces=yes',
    'RestrictRealtime=yes',
    'LockPersonality=yes',
    'RemoveIPC=yes',
    'SystemCallArchitectures=native',
    // verify reads the host's addresses (os.networkInterfaces: a netlink socket) to probe the admin port and the routes
    `RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX${oneshot ? ' AF_NETLINK' : ''}`,
    ...(lowPort
      ? ['CapabilityBoundingSet=CAP_NET_BIND_SERVICE', 'AmbientCapabilities=CAP_NET_BIND_SERVICE']
      : ['CapabilityBoundingSet=', 'AmbientCapabilities=']),
    // a one-shot is started by its timer, never by the target
    ...(oneshot ? [''] : ['', '[Install]', `WantedBy=${TARGET}`, '']),
  ];
  return lines.join('\n');
}

/** The scheduled acceptance run (`install --verify-every`, issue 46) and its timer. */
export const ACCEPTANCE_UNITS = Object.freeze({ service: unitName('acceptance'), timer: 'hospital-api-acceptance.timer' });

/** `verify --scheduled` every `everyS` seconds, the first two minutes after the stack starts. */
function acceptanceUnits(dir: string, everyS: number, o: UnitOptions): UnitFile[] {
  const root = installPaths(dir).root;
  const run: ServiceSpec = { name: 'acceptance', args: ['verify', '--scheduled', '--dir', root], ports: [] };
  return [
    { name: ACCEPTANCE_UNITS.service, text: service(run, dir, o, [unitName('api')], true) },
    {
      name: ACCEPTANCE_UNITS.timer,
      text: [
        '# Written by `hospital-api systemd` for `install --verify-every`: the scheduled acceptance runs.',
        '[Unit]',
        `Description=hospital-api scheduled acceptance every ${everyS}s (${root.replace(/%/g, '%%')})`,
        `PartOf=${TARGET}`,
        '',
        '[Timer]',
        'OnActiveSec=2min',
        `OnUnitActiveSec=${everyS}s`,
        'AccuracySec=1s',
        `Unit=${ACCEPTANCE_UNITS.service}`,
        '',
        '[Install]',
        `WantedBy=${TARGET}`,
        '',
      ].join('\n'),
    },
  ];
}

/** The units of a native install: one service per long-running component, and the target. */
export function renderUnits(dir: string, config: InstallConfig, o: UnitOptions): UnitFile[] {
  if (!profileOf(config.runtime).supervisorChoice) {
    throw new HospitalApiError('ERR_SYSTEMD_OPTIONS', { detail: `the ${config.runtime} runtime is run by its container engine, not systemd units` });
  }
  if (config.demo) throw new HospitalApiError('ERR_SYSTEMD_OPTIONS', { detail: 'a DEMO install is not for production; install without --demo' });
  if (!USER.test(o.user) || o.user === 'root') throw new HospitalApiError('ERR_SYSTEMD_OPTIONS', { detail: `--user must be a dedicated system user name, not "${o.user}"` });
  for (const p of [o.node, o.bin]) if (!isAbsolute(p)) throw new HospitalApiError('ERR_SYSTEMD_OPTIONS', { detail: `${p} is not an absolute path` });
  // Every component, whether or not the API may start yet: under systemd it restarts until its settings are complete.
  const specs = componentSpecs(dir, config).filter((s) => s.name !== 'platform');
  const units: UnitFile[] = specs.map((spec) => ({
    name: unitName(spec.name),
    text: service(spec, dir, o, spec.name === 'api' ? [unitName('gateway'), unitName('fhir')] : []),
  }));
  const scheduled = config.verifyEvery ? acceptanceUnits(dir, config.verifyEvery, o) : [];
  // the target starts the timer, never the one-shot itself
  const wanted = [...units.map((u) => u.name), ...scheduled.filter((u) => u.name.endsWith('.timer')).map((u) => u.name)];
  units.push(...scheduled);
  units.push({
    name: TARGET,
    text: [
      '# Written by `hospital-api systemd`: starts and stops every component together.',
      '[Unit]',
      `Description=hospital-api (${installPaths(dir).root.replace(/%/g, '%%')})`,
      `Wants=${wanted.join(' ')}`,
      '',
      '[Install]',
      'WantedBy=multi-user.target',
      '',
    ].join('\n'),
  });
  return units;
}

export function defaultUnitOptions(user = 'hospital-api'): UnitOptions {
  return { user, node: process.execPath, bin: BIN_PATH };
}

/**
 * `hospital-api install`: validate → decide TLS → write the install directory
 * → start the runtime → provision the gateway (issue 5). Nothing is written
 * before every input has been checked; a failure after the files are written
 * is completed by a rerun (each step is idempotent).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { VERSION } from '../version.js';
import { readEnvFile } from '../util/env-file.js';
import { HospitalApiError } from '../errors/index.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { missingApiSettings } from '../install-dir/api-settings.js';
import { INSTALL_FORMAT, readInstallConfig, type InstallConfig, type RuntimeName } from '../install-dir/install-config.js';
import { defaultRuntime, openRuntime, profileOf, runtimesTaking, siteEndpoints } from '../runtime/index.js';
import type { Runtime } from '../runtime/types.js';
import { parseInstallFlags, parseSupervisor, type InstallFlags, type InstallPlan } from './options.js';
import { prepareTls } from './tls.js';
import { writeInstallFiles } from './files.js';
import { writeIfChanged, type FileChange } from '../install-dir/write-if-changed.js';
import { monitoringFiles } from './monitoring.js';
import type { ComponentRole } from '../runtime/profile.js';
import { provisionGateway, type ProvisionStep } from './provision.js';
import { AUDIT_SEAL_COMMON_NAME } from '../tls/cms-verify.js';

export interface InstallResult {
  dir: string;
  runtime: RuntimeName;
  started: boolean;
  files: FileChange[];
  provisioning: ProvisionStep[];
  endpoints: ReturnType<typeof siteEndpoints>;
  platformApiUrlSet: boolean;
  /** PLATFORM_IDENTIFIER_SYSTEM, or PLATFORM_ANY_IDENTIFIER_SYSTEM=true, is in hospital-api.env. */
  identifierSystemSet: boolean;
  caGenerated: boolean;
}

export interface InstallHooks {
  log(text: string): void;
  /** For tests: the runtime to use instead of openRuntime(dir). */
  openRuntime?: (dir: string) => Runtime | Promise<Runtime>;
  /** For tests with their own runtime: instead of the profile's prepare (docker: Compose and images). */
  prepare?: (config: InstallConfig) => Promise<void>;
}

async function chooseRuntime(flag: RuntimeName | null, previous: InstallConfig | null, dir: string): Promise<RuntimeName> {
  if (flag && previous && previous.runtime !== flag) {
    throw new HospitalApiError('ERR_INSTALL_RUNTIME_CONFLICT', { dir, existing: previous.runtime, requested: flag });
  }
  if (flag) return flag;
  if (previous) return previous.runtime;
  return defaultRuntime();
}

/** Who runs the components where the runtime lets the hospital choose (install.json `supervisor`); docker's are run by the engine. */
function supervisorOf(runtime: RuntimeName, flag: 'builtin' | 'systemd' | null, previous: InstallConfig | null, demo: boolean): Pick<InstallConfig, 'supervisor'> {
  const choice = profileOf(runtime).supervisorChoice;
  if (flag !== null && !choice) {
    throw new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name: '--supervisor', detail: `the ${runtime} runtime is run by its container engine` });
  }
  // a new native install takes the environment's default (the Debian package's wrapper sets systemd where it
  // runs); a DEMO install never runs as system services (units refuse it)
  const fallback = previous || !choice || demo ? null : parseSupervisor('HOSPITAL_API_SUPERVISOR', process.env.HOSPITAL_API_SUPERVISOR);
  const chosen = flag ?? previous?.supervisor ?? fallback;
  return chosen ? { supervisor: chosen } : {};
}

/** A runtime flag the chosen runtime does not take is refused, naming both, before anything is written. */
function refuseOtherRuntimesFlags(runtime: RuntimeName, plan: InstallPlan): void {
  const takes = profileOf(runtime).installFlags;
  const other = plan.runtimeFlags.find((f) => !takes.includes(f.key));
  if (other === undefined) return;
  const owners = runtimesTaking(other.key);
  throw new HospitalApiError('ERR_USAGE', {
    detail: `${other.flag} is not a flag of the ${runtime} runtime${owners.length ? ` (only of ${owners.join(', ')})` : ''}; this install uses ${runtime}`,
  });
}

export async function runInstall(flags: InstallFlags, hooks: InstallHooks): Promise<InstallResult> {
  const dir = installPaths(flags.dir ?? defaultInstallDir()).root;
  const paths = installPaths(dir);
  const previous = existsSync(paths.installJson) ? readInstallConfig(dir) : null;
  const plan = parseInstallFlags(flags, previous);
  const runtime = await chooseRuntime(plan.runtime, previous, dir);
  refuseOtherRuntimesFlags(runtime, plan);
  if (plan.verifyEvery !== null && !profileOf(runtime).scheduledAcceptance) {
    throw new HospitalApiError('ERR_USAGE', {
      detail: `--verify-every is not available on the ${runtime} runtime: ${profileOf(runtime).scheduledAcceptanceRefusal ?? 'see docs/operations.md'}`,
    });
  }
  hooks.log(`install: ${runtime} runtime in ${dir}`);
  const profile = profileOf(runtime);
  const required = profile.requiredHosts.map((h) => ({ runtime, ...h }));
  const tls = prepareTls(plan.tls, paths, plan.hosts, [...profile.certificateHosts], required);
  const config: InstallConfig = {
    formatVersion: INSTALL_FORMAT,
    runtime,
    hosts: plan.hosts,
    ports: plan.ports,
    platformApiUrl: plan.platformApiUrl,
    caGenerated: tls.caGenerated,
    cors: plan.cors,
    toolkitVersion: VERSION,
    installedAt: previous?.installedAt ?? new Date().toISOString(),
    demo: plan.demo,
    ...(plan.monitoring ? { monitoring: true } : {}),
    ...(plan.verifyEvery !== null ? { verifyEvery: plan.verifyEvery } : {}),
    ...(previous?.upgrades ? { upgrades: previous.upgrades } : {}),
    ...supervisorOf(runtime, plan.supervisor, previous, plan.demo),
    ...(await profile.installSettings(plan.hosts, previous, { ...Object.fromEntries(plan.runtimeFlags.map((f) => [f.key, f.value])), ...plan.docker })),
  };
  const rendered = await profile.renderFiles(dir, config);
  if (config.monitoring) rendered.push(...monitoringFiles(dir, config));

  // What the runtime must fetch (docker images) is fetched before anything is written: a pull the
  // engine cannot make leaves the directory as it was (issue 27).
  if (plan.start) await (hooks.prepare ?? ((c) => profile.prepare(c, (line) => hooks.log(`  ${line}`))))(config);

  // Everything is validated: write.
  mkdirSync(dirname(dir), { recursive: true });
  const files = writeInstallFiles(paths, config, tls, plan.identifier);
  for (const f of rendered) files.push(writeIfChanged(f.path, f.text));
  for (const f of files) if (f.change !== 'unchanged') hooks.log(`  ${f.change} ${f.path}`);
  const platformSet = Boolean(readEnvFile(paths.apiEnv).PLATFORM_API_URL);
  if (!platformSet) {
    hooks.log(`  note: PLATFORM_API_URL is not set; add it to ${paths.apiEnv} (or rerun with --platform-url)`);
  }
  if (!tls.auditSeal) {
    // issue 46: a hospital CA whose key was not lent, and no audit-seal certificate given
    hooks.log(`  note: no audit-seal key configured: the audit log is chained but not sealed (removed last lines go unnoticed, and \`audit verify\` says so); rerun with --ca-key once, or --audit-seal-cert/--audit-seal-key (subject CN "${AUDIT_SEAL_COMMON_NAME}")`);
  }
  const identifierSet = !missingApiSettings(dir).includes('PLATFORM_IDENTIFIER_SYSTEM');
  if (!identifierSet) {
    hooks.log("  note: PLATFORM_IDENTIFIER_SYSTEM is not set; the Hospital API is held back until you rerun with --identifier-system <the platform's identifier system URI>");
  }

  let provisioning: ProvisionStep[] = [];
  if (plan.start) {
    const rt = await (hooks.openRuntime ?? openRuntime)(dir);
    hooks.log(`install: starting the ${runtime} runtime`);
    await rt.up();
    // a reissued certificate is read by the gateway only when it starts
    const certChanged = files.some((f) => f.change === 'updated' && (f.path === paths.gatewayCert || f.path === paths.gatewayKey));
    // a running component opens or closes its metrics listeners only when it starts (issue 48)
    const monitoringChanged = previous !== null && (previous.monitoring === true) !== (config.monitoring === true);
    const restarts = new Map<ComponentRole, string>();
    for (const role of certChanged ? profile.restartForNewCertificate : []) restarts.set(role, 'its new certificate');
    for (const role of monitoringChanged ? profile.restartForMonitoring : []) {
      const why = `monitoring ${config.monitoring ? 'on: its status listener opens' : 'off: its status listener closes'}`;
      restarts.set(role, restarts.has(role) ? `${restarts.get(role)} and ${why}` : why);
    }
    for (const [role, why] of restarts) {
      hooks.log(`install: restarting the ${role} for ${why}`);
      await rt.restart(profile.componentNames[role]);
    }
    hooks.log('install: provisioning the gateway');
    provisioning = await provisionGateway(rt.admin.bind(rt), config, (s) => hooks.log(`  ${s.kind} ${s.name}: ${s.change}${s.fields ? ` (${s.fields.join(', ')})` : ''}`));
  }
  return {
    dir,
    runtime,
    started: plan.start,
    files,
    provisioning,
    endpoints: siteEndpoints(config),
    platformApiUrlSet: platformSet,
    identifierSystemSet: identifierSet,
    caGenerated: tls.caGenerated,
  };
}

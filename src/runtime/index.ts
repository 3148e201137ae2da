/**
 * The runtime seam's public face: opens the runtime an installation was made
 * with (install.json decides; a native install is run by the built-in
 * supervisor or by systemd), and gives each runtime's profile by name. The
 * docker and swarm modules are imported on their first open only, so native
 * commands never load them. It exports the seam only (test/runtime/seam.test.ts): what a
 * runtime's internals implement is declared here or in a file beside it (types.ts,
 * profiles.ts), never re-exported from docker/, native/, systemd/, swarm/ or container/.
 */
import { readInstallConfig, type InstallConfig, type RuntimeName } from '../install-dir/install-config.js';
import type { RecordedStack, Runtime, ServiceUnit } from './types.js';
import { createSystemdRuntime } from './systemd/runtime.js';
import { defaultUnitOptions, renderUnits, TARGET } from './systemd/units.js';
import { createNativeRuntime } from './native/index.js';
import { recordedStack as nativeRecordedStack } from './native/recorded.js';

export { defaultRuntime, isRuntimeName, profileOf, RUNTIME_NAMES, runtimesTaking, siteEndpoints, siteFhirClient } from './profiles.js';
export type { RecordedStack, ServiceUnit } from './types.js';

const OPEN: Readonly<Record<RuntimeName, (dir: string, config: InstallConfig) => Promise<Runtime>>> = {
  // Production native installs run under systemd when `hospital-api systemd --managed` said so (issue 15).
  native: async (dir, config) => (config.supervisor === 'systemd' ? createSystemdRuntime(dir, config) : createNativeRuntime(dir, config)),
  docker: async (dir, config) => (await import('./docker/index.js')).createDockerRuntime(dir, config),
  // issue 29: the stack over several hosts
  swarm: async (dir, config) => (await import('./swarm/index.js')).createSwarmRuntime(dir, config),
};

/** The runtime of `config`, also one of an older install format that install.json's reader refuses (backup, upgrade). */
export function runtimeFor(dir: string, config: InstallConfig): Promise<Runtime> {
  return OPEN[config.runtime](dir, config);
}

/** @throws ERR_RUNTIME_NOT_INSTALLED when `dir` holds no install.json. */
export async function openRuntime(dir: string): Promise<Runtime> {
  return runtimeFor(dir, readInstallConfig(dir));
}

/**
 * The processes a runtime recorded starting in `dir`, read without install.json, or null when
 * none did. Only the native supervisor keeps such a record (run/state.json); a container
 * engine knows its own containers.
 */
export function recordedStack(dir: string): RecordedStack | null {
  return nativeRecordedStack(dir);
}

/**
 * The systemd units that run a native install (`hospital-api systemd`, issue 15) as `user`, and
 * the target that starts them all.
 * @throws ERR_SYSTEMD_OPTIONS for a container runtime's or a demo install, or a user that is root or no system user name
 */
export function systemdUnits(dir: string, config: InstallConfig, user?: string): { target: string; units: ServiceUnit[] } {
  return { target: TARGET, units: renderUnits(dir, config, defaultUnitOptions(user)) };
}

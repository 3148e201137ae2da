/**
 * The runtime seam's public face: opens the runtime an installation was made
 * with (install.json decides; a native install is run by the built-in
 * supervisor or by systemd), and gives each runtime's profile by name. The
 * docker and swarm modules are imported on their first open only, so native
 * commands never load them.
 */
import { readInstallConfig, type InstallConfig, type RuntimeName } from '../install-dir/install-config.js';
import type { Runtime } from './types.js';
import { createSystemdRuntime } from './systemd/runtime.js';
import { createNativeRuntime } from './native/index.js';

export { defaultRuntime, isRuntimeName, profileOf, RUNTIME_NAMES, runtimesTaking, siteEndpoints, siteFhirClient } from './profiles.js';
export { recordedStack, type RecordedStack } from './native/recorded.js';
// `hospital-api systemd` writes the units the systemd runtime runs
export { defaultUnitOptions, renderUnits, TARGET as SYSTEMD_TARGET } from './systemd/units.js';

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

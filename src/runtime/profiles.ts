/**
 * Each runtime's profile by name, for code that has a runtime name but no
 * runtime to open (install before install.json exists, backup, verify), and the
 * names install accepts. Light on purpose: neither profile loads its runtime.
 */
import { endpoints, RUNTIME_NAMES, type InstallConfig, type RuntimeName } from '../install-dir/install-config.js';
import { installPaths } from '../install-dir/layout.js';
import { dockerProfile } from './docker/profile.js';
import { nativeProfile } from './native/profile.js';
import { swarmProfile } from './swarm/profile.js';
import type { RuntimeFlag, RuntimeProfile } from './profile.js';

export { RUNTIME_NAMES, type RuntimeName };

/**
 * In the order install prefers them when --runtime is not given. Swarm is last and never the default:
 * native, before it, is always available; a hospital asks for several hosts with --runtime swarm.
 */
const PROFILES: Readonly<Record<RuntimeName, RuntimeProfile>> = { docker: dockerProfile, native: nativeProfile, swarm: swarmProfile };

/** The runtime the DEMO (`npm start`) installs: the one that needs nothing but Node. */
export const DEMO_RUNTIME: RuntimeName = 'native';

/** The runtimes the DEMO can run on (`demo --runtime`): one host each, so not swarm. */
export const DEMO_RUNTIMES: readonly RuntimeName[] = ['docker', 'native'];

/** The runtimes whose install takes `flag` (for the error that refuses it elsewhere). */
export function runtimesTaking(flag: RuntimeFlag): RuntimeName[] {
  return Object.values(PROFILES).filter((p) => p.installFlags.includes(flag)).map((p) => p.name);
}

export function isRuntimeName(name: string): name is RuntimeName {
  return (RUNTIME_NAMES as readonly string[]).includes(name);
}

export function profileOf(name: RuntimeName): RuntimeProfile {
  return PROFILES[name];
}

/** The first runtime, in order of preference, that can run on this host (native always can). */
export async function defaultRuntime(): Promise<RuntimeName> {
  for (const profile of Object.values(PROFILES)) if (await profile.available()) return profile.name;
  return 'native';
}

/** An installation's public URLs, with the FHIR base where this host actually reaches it (its runtime's profile). */
export function siteEndpoints(config: InstallConfig): ReturnType<typeof endpoints> {
  return { ...endpoints(config), fhirBase: profileOf(config.runtime).fhirBaseOnHost(config) };
}

/**
 * How a client on this host reaches an installation's full FHIR API: the base where its port is
 * published and the headers its runtime asks for there (docker: the FHIR door's token). The headers
 * are a secret: send them to that base only, never print them.
 */
export function siteFhirClient(dir: string, config: InstallConfig): { base: string; headers: Record<string, string> } {
  const profile = profileOf(config.runtime);
  return { base: profile.fhirBaseOnHost(config), headers: profile.fhirClientHeaders(installPaths(dir)) };
}

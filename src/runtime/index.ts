/**
 * Opens the runtime an installation was made with (install.json decides).
 * The docker module is imported lazily, on the first call, so native commands
 * never load it.
 */
import { readInstallConfig, type InstallConfig } from '../install-dir/install-config.js';
import type { Runtime } from './types.js';
import { dayTwo } from './not-supported.js';
import { createSystemdRuntime } from './systemd/runtime.js';
import { createNativeRuntime } from './native/index.js';

type DockerFactory = (dir: string, config: InstallConfig) => Runtime;

function lazyDocker(dir: string, config: InstallConfig): Runtime {
  let loaded: Promise<Runtime> | null = null;
  const get = (): Promise<Runtime> => {
    // A variable specifier keeps the import lazy and off the native path.
    const specifier = './docker/index.js';
    loaded ??= (import(specifier) as Promise<{ createDockerRuntime: DockerFactory }>).then((m) => m.createDockerRuntime(dir, config));
    return loaded;
  };
  return {
    name: 'docker',
    up: async (options) => (await get()).up(options),
    down: async () => (await get()).down(),
    restart: async (component) => (await get()).restart(component),
    components: async () => (await get()).components(),
    versions: async () => (await get()).versions(),
    admin: async (method, path, body) => (await get()).admin(method, path, body),
    // Day-two operations (issue 15), forwarded when the docker runtime has them (see not-supported.ts).
    reloadApiKey: async () => dayTwo(await get()).reloadApiKey(),
    reloadGatewayTls: async () => dayTwo(await get()).reloadGatewayTls(),
    snapshotData: async (into, progress) => dayTwo(await get()).snapshotData(into, progress),
    restoreData: async (from, parts) => dayTwo(await get()).restoreData(from, parts),
  };
}

/** @throws ERR_RUNTIME_NOT_INSTALLED when `dir` holds no install.json. */
export function openRuntime(dir: string): Runtime {
  const config = readInstallConfig(dir);
  if (config.runtime !== 'native') return lazyDocker(dir, config);
  // Production native installs run under systemd when `hospital-api systemd --managed` said so (issue 15).
  return config.supervisor === 'systemd' ? createSystemdRuntime(dir, config) : createNativeRuntime(dir, config);
}

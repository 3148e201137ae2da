/**
 * The Docker Swarm runtime (issue 29). Its profile, settings and stack file
 * exist; the runtime that deploys and runs the stack does not yet, so an
 * install.json that names swarm is refused with a stable code instead of
 * being half run.
 */
import type { InstallConfig } from '../../install-dir/install-config.js';
import type { Runtime } from '../types.js';
import { swarmUnfinished } from './profile.js';

/** @throws ERR_RUNTIME_UNSUPPORTED, always, until the runtime exists */
export async function createSwarmRuntime(_dir: string, _config: InstallConfig): Promise<Runtime> {
  throw swarmUnfinished('it cannot start, stop or reach a stack yet');
}

import { createHash } from 'node:crypto';
import { installPaths } from '../../install-dir/layout.js';

/** A compose project (and swarm stack) name per install directory, stable across reruns. */
export function projectName(dir: string): string {
  const hash = createHash('sha256').update(installPaths(dir).root).digest('hex').slice(0, 8);
  return `hospital-api-${hash}`;
}

/**
 * The images a docker install runs, fetched before they are needed: install
 * pulls them before it writes anything (the profile's prepare), and `up`
 * pulls what went missing since. A pull that fails names its cause
 * (failure.ts): an engine that cannot reach the registry, an image refused.
 */
import type { DockerSettings } from '../../install-dir/install-config.js';
import type { DockerCli } from '../container/compose.js';

/** Postgres, Kong, HAPI and, when one is named, the API image (else it is built from the Dockerfile). */
export function imagesToPull(settings: DockerSettings): string[] {
  const { postgres, kong, hapi, api } = settings.images;
  return [...new Set([postgres, kong, hapi, ...(api ? [api] : [])])];
}

/** Pulls, each as its own step with progress and no time limit, the images not present yet. */
export async function pullMissingImages(c: Pick<DockerCli, 'run'>, refs: readonly string[], progress: (line: string) => void): Promise<void> {
  for (const ref of refs) {
    const present = await c.run(['image', 'inspect', '--format', '{{.Id}}', ref], { allowFail: true });
    if (present.exitCode === 0) continue;
    // an engine that does not answer is not a missing image
    if (!/no such image/i.test(present.stderr)) await c.run(['info', '--format', '{{.ServerVersion}}']);
    progress(`pulling ${ref}`);
    await c.run(['pull', ref], { timeoutMs: null, onProgress: progress });
  }
}

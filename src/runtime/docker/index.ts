/**
 * The docker runtime (production): Kong 3.9 + Postgres, HAPI FHIR + Postgres
 * and the hospital-api image in one compose project rendered from templates/.
 * Admin calls run curl inside the kong container, since the admin API is
 * never published on the host (spec §1, §4.4).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { HospitalApiError } from '../../errors/index.js';
import { missingApiSettings } from '../api-settings.js';
import type { InstallConfig } from '../install-config.js';
import { installPaths } from '../layout.js';
import type { AdminResponse, ComponentState, ComponentVersion, Runtime } from '../types.js';
import { dockerCli } from './compose.js';
import { componentsFromPs, parsePsOutput, versionsFromInspect, type ContainerInspect, type ImageInspect } from './parse.js';
import { composeFile, projectName } from './render.js';

/** Runtime component names (as native uses them) → compose services. */
export const SERVICE_OF: Readonly<Record<string, string>> = Object.freeze({
  api: 'hospital-api',
  gateway: 'kong',
  fhir: 'hapi',
});

const ADMIN_URL = 'http://127.0.0.1:8001';

/** Every long-running service but the API, which waits for its key (as native does). */
export const STACK_WITHOUT_API: readonly string[] = Object.freeze(['kong-database', 'kong-migrations', 'kong', 'hapi-database', 'hapi']);

/** The API container starts only once the hospital has created its key and named the platform. */
export function apiReady(dir: string): boolean {
  return missingApiSettings(dir).length === 0;
}

/** Splits curl's output: the body, then the status code written by -w on its own last line. */
export function parseCurlOutput(stdout: string): AdminResponse {
  const cut = stdout.lastIndexOf('\n');
  const status = Number(stdout.slice(cut + 1).trim());
  const text = cut >= 0 ? stdout.slice(0, cut) : '';
  let body: unknown = null;
  if (text.trim()) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: Number.isInteger(status) ? status : 0, body };
}

function curlMissing(stderr: string, exitCode: number): boolean {
  return exitCode === 127 || exitCode === 126 || /executable file not found|curl: not found|no such file or directory/i.test(stderr);
}

async function fhirAnswers(port: number): Promise<boolean> {
  try {
    const res = await request(`http://127.0.0.1:${port}/fhir/metadata`, { headersTimeout: 5000, bodyTimeout: 5000 });
    await res.body.dump();
    return res.statusCode === 200;
  } catch {
    return false;
  }
}

export function createDockerRuntime(dir: string, config: InstallConfig, options: { waitTimeoutMs?: number; pollMs?: number } = {}): Runtime {
  const cli = dockerCli(projectName(dir), composeFile(dir));
  const waitTimeoutMs = options.waitTimeoutMs ?? 600_000;
  const pollMs = options.pollMs ?? 3000;

  const components = async (): Promise<ComponentState[]> => {
    const res = await cli.compose(['ps', '--all', '--format', 'json']);
    return componentsFromPs(parsePsOutput(res.stdout));
  };

  const waitHealthy = async (withApi: boolean): Promise<void> => {
    const deadline = Date.now() + waitTimeoutMs;
    for (;;) {
      const list = (await components()).filter((c) => withApi || c.name !== SERVICE_OF.api);
      const ready = list.length > 0 && list.every((c) => c.state === 'up') && (await fhirAnswers(config.ports.fhir));
      if (ready) return;
      if (Date.now() > deadline) {
        const waiting = list.filter((c) => c.state !== 'up').map((c) => `${c.name} (${c.detail})`);
        throw new HospitalApiError('ERR_INSTALL_HEALTH_TIMEOUT', {
          seconds: Math.round(waitTimeoutMs / 1000),
          what: waiting.length ? waiting.join(', ') : 'HAPI FHIR /fhir/metadata',
        });
      }
      await sleep(pollMs);
    }
  };

  return {
    name: 'docker',
    async up() {
      const withApi = apiReady(dir);
      await cli.compose(['up', '-d', '--build', '--remove-orphans', ...(withApi ? [] : STACK_WITHOUT_API)]);
      await waitHealthy(withApi);
    },
    async down() {
      await cli.compose(['down']);
    },
    async restart(component) {
      const service = SERVICE_OF[component] ?? component;
      // recreate, not restart: a changed env_file (FHIR_API_KEY) is read only on create;
      // --build: the API image is built on its first start, after consumer create
      await cli.compose(['up', '-d', '--no-deps', '--force-recreate', '--build', service]);
    },
    components,
    async versions(): Promise<ComponentVersion[]> {
      const ids = (await cli.compose(['ps', '-q'])).stdout.split('\n').map((s) => s.trim()).filter(Boolean);
      if (ids.length === 0) return [];
      const containers = JSON.parse((await cli.run(['inspect', ...ids])).stdout) as ContainerInspect[];
      const imageIds = [...new Set(containers.map((c) => c.Image))];
      const images = JSON.parse((await cli.run(['image', 'inspect', ...imageIds])).stdout) as ImageInspect[];
      return versionsFromInspect(containers, images);
    },
    async admin(method, path, body): Promise<AdminResponse> {
      const args = ['exec', '-T', 'kong', 'curl', '-sS', '-X', method, '-w', '\n%{http_code}'];
      if (body !== undefined) args.push('-H', 'Content-Type: application/json', '--data-binary', '@-');
      args.push(`${ADMIN_URL}${path}`);
      const res = await cli.compose(args, { allowFail: true, ...(body === undefined ? {} : { input: JSON.stringify(body) }) });
      if (res.exitCode !== 0) {
        if (curlMissing(res.stderr, res.exitCode)) throw new HospitalApiError('ERR_INSTALL_DOCKER_CURL', { service: 'kong' });
        throw new HospitalApiError('ERR_INSTALL_ADMIN_UNREACHABLE', { detail: res.stderr.trim() || `exit code ${res.exitCode}` });
      }
      return parseCurlOutput(res.stdout);
    },
  };
}

/**
 * The docker CLI and Compose, through execa (argv only, no shell: no value is
 * ever interpreted).
 *
 * Compose is chosen only when it works (issue 10): `docker compose` (v2), else
 * `docker-compose` 1.29 or later (what Debian 12 and Ubuntu 22.04 ship beside
 * docker.io), else none. `docker info` answering says nothing about Compose: a
 * Docker CLI without the plugin answers "unknown command" (docker/compose docs,
 * "Install the plugin"); Podman's docker shim has no compose either.
 */
import { execa } from 'execa';
import { HospitalApiError } from '../../errors/index.js';
import { dockerFailureCode } from './failure.js';

export interface DockerResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export interface RunOptions {
  input?: string;
  allowFail?: boolean;
  /** Default 120 s; `null` for none (pulls and builds take what they take). */
  timeoutMs?: number | null;
  /** Stream stderr lines here as they come (progress of pulls and builds). */
  onProgress?: (line: string) => void;
}

export interface DockerCli {
  /** `docker <args>`; throws ERR_INSTALL_DOCKER on a non-zero exit unless `allowFail`. */
  run(args: string[], options?: RunOptions): Promise<DockerResult>;
  /** `docker compose -p <project> -f <file> <args>` (v2) or `docker-compose -p … -f … <args>` (v1). */
  compose(args: string[], options?: RunOptions): Promise<DockerResult>;
  /**
   * Compose `args` with its output handed to `onText` as it comes, until it exits or `signal`
   * aborts (then it is stopped and this resolves): `logs --follow`.
   */
  composeStream(args: string[], onText: (text: string) => void, signal: AbortSignal): Promise<void>;
}

/** The programs the runtime runs: `docker`, and Compose as found by findCompose. Tests name their own. */
export interface DockerBinaries {
  docker: string;
  /** argv prefix of Compose, e.g. ['docker', 'compose'] or ['docker-compose']. */
  compose: string[];
}

export interface ComposeFound {
  argv: string[];
  version: string;
  major: 1 | 2;
}

/** "1.29.2", "v2.24.5", "2.24.5-desktop.1", "docker-compose version 1.29.2, build unknown" → [major, minor]. */
export function parseComposeVersion(text: string): [number, number] | null {
  const m = /(\d+)\.(\d+)\.\d+/.exec(text);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

async function version(argv: string[]): Promise<string | null> {
  try {
    const [bin, ...rest] = argv as [string, ...string[]];
    const res = await execa(bin, [...rest, 'version', '--short'], { reject: false, timeout: 30_000, stdin: 'ignore' });
    return res.exitCode === 0 ? String(res.stdout).trim() : null;
  } catch {
    return null;
  }
}

/**
 * Compose v2 if the docker CLI has it, else docker-compose 1.29+ (older v1
 * releases lack `service_completed_successfully`), else null.
 */
export async function findCompose(docker = 'docker', legacy = 'docker-compose'): Promise<ComposeFound | null> {
  const v2 = await version([docker, 'compose']);
  const p2 = v2 ? parseComposeVersion(v2) : null;
  if (v2 && p2 && p2[0] >= 2) return { argv: [docker, 'compose'], version: v2, major: 2 };
  const v1 = await version([legacy]);
  const p1 = v1 ? parseComposeVersion(v1) : null;
  if (v1 && p1 && (p1[0] >= 2 || (p1[0] === 1 && p1[1] >= 29))) return { argv: [legacy], version: v1, major: p1[0] >= 2 ? 2 : 1 };
  return null;
}

/** @throws ERR_INSTALL_DOCKER_NO_COMPOSE */
export async function requireCompose(docker = 'docker'): Promise<ComposeFound> {
  const found = await findCompose(docker);
  if (!found) throw new HospitalApiError('ERR_INSTALL_DOCKER_NO_COMPOSE');
  return found;
}

/**
 * How long docker-compose 1.29 waits for one answer from the engine (its
 * COMPOSE_HTTP_TIMEOUT, default 60 s: Compose v1 CLI environment variables).
 * Removing a container on a storage driver without copy-on-write (vfs: each
 * container is a full copy of its image) takes the engine longer than that
 * when a whole project is removed at once: on the tier engine under load,
 * removing a project's containers failed with "Read timed out. (read
 * timeout=60)" (the nine containers of a stack, and eleven in a trial with
 * more services). The runtime puts no time limit on up and down itself; a
 * value the operator set is kept.
 */
export const COMPOSE_HTTP_TIMEOUT_S = 600;

export function dockerCli(project: string, file: string, bins: DockerBinaries): DockerCli {
  const exec = async (argv: string[], args: string[], options: RunOptions = {}, env?: Record<string, string>): Promise<DockerResult> => {
    const [bin, ...prefix] = argv as [string, ...string[]];
    const what = [...prefix, ...args].filter((a) => !a.startsWith('-') && a !== project && a !== file).slice(0, 2).join(' ');
    const timeout = options.timeoutMs === null ? undefined : (options.timeoutMs ?? 120_000);
    const child = execa(bin, [...prefix, ...args], {
      reject: false,
      ...(env ? { env } : {}),
      ...(timeout === undefined ? {} : { timeout }),
      ...(options.input === undefined ? { stdin: 'ignore' as const } : { input: options.input }),
    });
    if (options.onProgress && child.stderr) {
      let buffered = '';
      child.stderr.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const lines = buffered.split(/\r?\n|\r/);
        buffered = lines.pop() ?? '';
        for (const l of lines) if (l.trim()) options.onProgress?.(l.trim());
      });
    }
    const res = await child;
    const out = { stdout: String(res.stdout ?? ''), stderr: String(res.stderr ?? ''), exitCode: res.exitCode ?? 1 };
    if (res.failed && res.exitCode === undefined) {
      throw new HospitalApiError('ERR_INSTALL_DOCKER', { command: what, detail: res.shortMessage ?? 'could not run docker' });
    }
    if (out.exitCode !== 0 && !options.allowFail) {
      const detail = out.stderr.trim().split('\n').slice(-3).join(' ') || `exit code ${out.exitCode}`;
      throw new HospitalApiError(dockerFailureCode(out.stderr), { command: what, detail });
    }
    return out;
  };
  const composeEnv = () => ({ COMPOSE_HTTP_TIMEOUT: process.env.COMPOSE_HTTP_TIMEOUT ?? String(COMPOSE_HTTP_TIMEOUT_S) });
  return {
    run: (args, options) => exec([bins.docker], args, options),
    async composeStream(args, onText, signal) {
      if (signal.aborted) return;
      const [bin, ...prefix] = bins.compose as [string, ...string[]];
      const child = execa(bin, [...prefix, '-p', project, '-f', file, ...args], { reject: false, env: composeEnv(), stdin: 'ignore', cancelSignal: signal, buffer: false });
      child.stdout?.on('data', (chunk: Buffer) => onText(chunk.toString('utf8')));
      const res = await child;
      if (!signal.aborted && res.exitCode !== 0) {
        throw new HospitalApiError('ERR_INSTALL_DOCKER', { command: args.slice(0, 2).join(' '), detail: res.shortMessage ?? `exit code ${res.exitCode}` });
      }
    },
    compose: (args, options) =>
      exec(bins.compose, ['-p', project, '-f', file, ...args], options, composeEnv()),
  };
}

/** True when a Docker engine answers `docker info` (install's runtime choice; Compose is checked apart). */
export async function dockerEngineAnswers(bin = 'docker'): Promise<boolean> {
  try {
    const res = await execa(bin, ['info', '--format', '{{.ServerVersion}}'], { reject: false, timeout: 15_000, stdin: 'ignore' });
    return res.exitCode === 0 && String(res.stdout).trim().length > 0;
  } catch {
    return false;
  }
}

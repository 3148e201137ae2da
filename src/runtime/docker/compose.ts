/**
 * The docker CLI, through execa: `docker compose -p <project> -f <file> …`.
 * Every call is argv-based (no shell), so no value is ever interpreted.
 */
import { execa } from 'execa';
import { HospitalApiError } from '../../errors/index.js';

export interface DockerResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export interface DockerCli {
  /** `docker <args>`; throws ERR_INSTALL_DOCKER on a non-zero exit unless `allowFail`. */
  run(args: string[], options?: { input?: string; allowFail?: boolean; timeoutMs?: number }): Promise<DockerResult>;
  /** `docker compose -p <project> -f <file> <args>`. */
  compose(args: string[], options?: { input?: string; allowFail?: boolean; timeoutMs?: number }): Promise<DockerResult>;
}

export function dockerCli(project: string, file: string, bin = process.env.HOSPITAL_API_DOCKER || 'docker'): DockerCli {
  const run: DockerCli['run'] = async (args, options = {}) => {
    const res = await execa(bin, args, {
      reject: false,
      timeout: options.timeoutMs ?? 600_000,
      ...(options.input === undefined ? { stdin: 'ignore' as const } : { input: options.input }),
    });
    const out = { stdout: String(res.stdout ?? ''), stderr: String(res.stderr ?? ''), exitCode: res.exitCode ?? 1 };
    if (res.failed && res.exitCode === undefined) {
      throw new HospitalApiError('ERR_INSTALL_DOCKER', { command: args.slice(0, 3).join(' '), detail: res.shortMessage ?? 'could not run docker' });
    }
    if (out.exitCode !== 0 && !options.allowFail) {
      const detail = out.stderr.trim().split('\n').slice(-3).join(' ') || `exit code ${out.exitCode}`;
      throw new HospitalApiError('ERR_INSTALL_DOCKER', { command: args.slice(0, 3).join(' '), detail });
    }
    return out;
  };
  return {
    run,
    compose: (args, options) => run(['compose', '-p', project, '-f', file, ...args], options),
  };
}

/** True when a Docker engine answers `docker info` (install's runtime choice). */
export async function dockerEngineAnswers(bin = process.env.HOSPITAL_API_DOCKER || 'docker'): Promise<boolean> {
  try {
    const res = await execa(bin, ['info', '--format', '{{.ServerVersion}}'], { reject: false, timeout: 15_000, stdin: 'ignore' });
    return res.exitCode === 0 && String(res.stdout).trim().length > 0;
  } catch {
    return false;
  }
}

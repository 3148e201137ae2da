/** Runs the real CLI as a child process, as a hospital would. */
import { execa, type Options, type ResultPromise } from 'execa';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/hospital-api.js', import.meta.url));

/** How a test runs the CLI: execa's options, and what it runs the CLI through. */
export type CliOptions = Options & {
  /**
   * A command the CLI runs under (`nsenter … sh -c '…' …`, as on a swarm tier node): its argv,
   * followed by this Node's path, the executable and the arguments.
   */
  through?: readonly string[];
};

/** Runs `hospital-api ...args` to completion; never throws on a non-zero exit. */
export function runCli(args: string[], options: CliOptions = {}) {
  const { through, ...rest } = options;
  const [bin, argv] = through?.length ? [through[0] as string, [...through.slice(1), process.execPath, BIN, ...args]] : ['node', [BIN, ...args]];
  return execa(bin, argv, { reject: false, timeout: 120_000, ...rest, env: { NO_COLOR: '1', ...rest.env } });
}

/** Starts a long-running command (serve, gateway, fhir); the caller kills it. */
export function startCli(args: string[], options: Options = {}): ResultPromise {
  return execa('node', [BIN, ...args], { reject: false, ...options, env: { NO_COLOR: '1', ...options.env } });
}

/** A finished CLI run as the tests read it: the exit code (-1 when it was killed before exiting) and its output as text. */
export interface CliOutcome {
  code: number;
  out: string;
  err: string;
}

/** Runs `hospital-api ...args` to completion (as runCli) and gives its outcome as text. */
export async function cli(args: string[], options: CliOptions = {}): Promise<CliOutcome> {
  const r = await runCli(args, options);
  return { code: r.exitCode ?? -1, out: String(r.stdout), err: String(r.stderr) };
}

/**
 * The CLI run to completion in an install directory: `--dir <dir>` is appended to every command
 * (`dir` may be a function, for a directory a `beforeAll` chooses). `defaults` apply to every run
 * (a longer `timeout`), `options` to one (its `env`).
 */
export function cliAt(dir: string | (() => string), defaults: CliOptions = {}): (args: string[], options?: CliOptions) => Promise<CliOutcome> {
  return (args, options = {}) => cli([...args, '--dir', typeof dir === 'function' ? dir() : dir], { ...defaults, ...options, env: { ...defaults.env, ...options.env } });
}

/** Runs the real CLI as a child process, as a hospital would. */
import { execa, type Options, type ResultPromise } from 'execa';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/hospital-api.js', import.meta.url));

/** Runs `hospital-api ...args` to completion; never throws on a non-zero exit. */
export function runCli(args: string[], options: Options = {}) {
  return execa('node', [BIN, ...args], { reject: false, timeout: 120_000, ...options, env: { NO_COLOR: '1', ...options.env } });
}

/** Starts a long-running command (serve, gateway, fhir); the caller kills it. */
export function startCli(args: string[], options: Options = {}): ResultPromise {
  return execa('node', [BIN, ...args], { reject: false, ...options, env: { NO_COLOR: '1', ...options.env } });
}

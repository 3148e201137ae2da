/**
 * The real-engine tier's access to Docker: whether an engine answers (DOCKER_HOST
 * or Docker's default socket), the images scripts/docker-engine.mjs builds, and
 * small `docker` helpers. Nothing here fakes an answer.
 */
import { execa } from 'execa';
import { fileURLToPath } from 'node:url';

export const ENGINE_SCRIPT = fileURLToPath(new URL('../../scripts/docker-engine.mjs', import.meta.url));

/** Must match TIER_IMAGES in scripts/docker-engine.mjs (HOSPITAL_API_TIER_SUFFIX as there). */
const SUFFIX = process.env.HOSPITAL_API_TIER_SUFFIX ? `-${process.env.HOSPITAL_API_TIER_SUFFIX}` : '';
export const TIER_IMAGES = Object.freeze({
  postgres: 'hospital-api-tier/postgres:15',
  api: `hospital-api-tier/hospital-api:dev${SUFFIX}`,
  kong: `hospital-api-tier/kong:3.9.3-standin${SUFFIX}`,
  hapi: `hospital-api-tier/hapi:v8.10.0-3-standin${SUFFIX}`,
  /** Built by systemd.test.ts itself (images/systemd): Debian with systemd as PID 1 and the toolkit. */
  systemdHost: `hospital-api-tier/systemd-host:dev${SUFFIX}`,
  /** The local Debian base scripts/docker-engine.mjs imports. */
  debian: 'hospital-api-tier/debian:bookworm',
  /** That base with the pinned Node (scripts/docker-engine.mjs): the tier's NODE_IMAGE. */
  node: 'hospital-api-tier/node:24',
});

export async function engineAnswers(): Promise<boolean> {
  const res = await execa('docker', ['info', '--format', '{{.ServerVersion}}'], { reject: false, timeout: 20_000, stdin: 'ignore' });
  return res.exitCode === 0 && String(res.stdout).trim().length > 0;
}

/** The one line a run without an engine prints, once per file. */
export function sayNoEngine(): void {
  process.stdout.write('skipped: no Docker engine\n');
}

export async function docker(args: string[], options: { input?: string; allowFail?: boolean; timeout?: number } = {}) {
  const res = await execa('docker', args, {
    reject: false,
    timeout: options.timeout ?? 120_000,
    ...(options.input === undefined ? { stdin: 'ignore' as const } : { input: options.input }),
  });
  if (res.exitCode !== 0 && !options.allowFail) throw new Error(`docker ${args.slice(0, 3).join(' ')}: exit ${res.exitCode}: ${String(res.stderr).trim()}`);
  return { code: res.exitCode ?? 1, out: String(res.stdout), err: String(res.stderr) };
}

/** Builds (or finds cached) the tier's images; returns the script's timing lines. */
export async function buildImages(): Promise<string> {
  const res = await execa('node', [ENGINE_SCRIPT, 'images'], { reject: false, stdin: 'ignore' });
  if (res.exitCode !== 0) throw new Error(`scripts/docker-engine.mjs images failed: ${String(res.stderr).trim().slice(-2000)}`);
  return String(res.stderr);
}

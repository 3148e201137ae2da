/** Puts the recorded-output `docker` stand-in (test/fixtures/docker) first on PATH and reads its log. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = fileURLToPath(new URL('../../fixtures/docker/', import.meta.url));

export function useDockerShim(logDir: string): { log: string; calls(): string[][]; reset(): void } {
  const log = join(logDir, 'docker-calls.ndjson');
  process.env.PATH = `${FIXTURES.replace(/\/$/, '')}:${process.env.PATH ?? ''}`;
  process.env.DOCKER_SHIM_LOG = log;
  delete process.env.HOSPITAL_API_DOCKER;
  return {
    log,
    calls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as string[]) : []),
    reset: () => writeFileSync(log, ''),
  };
}

/**
 * Reinstalling into a directory whose secrets were lost, next to the project's
 * existing database volumes, cannot work: the Postgres images apply
 * POSTGRES_PASSWORD_FILE only when the data directory is empty
 * (docker-library/postgres docker-entrypoint.sh), so the new passwords never
 * reach the old databases and Kong and HAPI fail to connect. Before anything
 * else starts, each existing database is asked, over TCP, to accept the
 * password install now holds; a refusal stops the databases again and ends
 * with ERR_INSTALL_DOCKER_STALE_VOLUMES, which names the purge.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { installPaths } from '../../install-dir/layout.js';
import type { DockerCli } from '../container/compose.js';

const DATABASES = [
  { service: 'kong-database', volume: 'kong-data', user: 'kong', secret: 'kong-pg-password' },
  { service: 'hapi-database', volume: 'hapi-data', user: 'hapi', secret: 'hapi-pg-password' },
] as const;

/** The password comes on stdin, so it is in no argv and no environment docker keeps. */
const CHECK = 'IFS= read -r PGPASSWORD; export PGPASSWORD; exec psql -X -q -h 127.0.0.1 -U "$1" -d "$1" -tAc "SELECT 1"';

export async function refuseStaleVolumes(cli: DockerCli, dir: string, project: string, hooks: { waitReady(): Promise<void> }): Promise<void> {
  const existing = (await cli.run(['volume', 'ls', '-q', '--filter', `label=com.docker.compose.project=${project}`])).stdout
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean);
  const present = DATABASES.filter((d) => existing.includes(`${project}_${d.volume}`));
  if (present.length === 0) return;
  // start only the databases that are not running: `up` on a running one may recreate it
  const running = (await cli.compose(['ps', '--services', '--filter', 'status=running'], { allowFail: true })).stdout.split('\n').map((s) => s.trim());
  const stopped = present.filter((d) => !running.includes(d.service)).map((d) => d.service);
  if (stopped.length) await cli.compose(['up', '-d', '--no-deps', ...stopped], { timeoutMs: null });
  await hooks.waitReady();
  const refused: string[] = [];
  for (const d of present) {
    const id = (await cli.compose(['ps', '-q', d.service])).stdout.trim().split('\n')[0] ?? '';
    const password = readFileSync(join(installPaths(dir).secrets, d.secret), 'utf8').trim();
    const res = await cli.run(['exec', '-i', id, 'sh', '-c', CHECK, 'sh', d.user], { allowFail: true, input: `${password}\n` });
    if (res.exitCode !== 0) {
      if (!/password authentication failed|authentication failed/i.test(res.stderr)) {
        throw new HospitalApiError('ERR_INSTALL_DOCKER', { command: `exec ${d.service} psql`, detail: res.stderr.trim().slice(0, 300) });
      }
      refused.push(`${project}_${d.volume}`);
    }
  }
  if (refused.length) {
    await cli.compose(['stop'], { timeoutMs: null });
    throw new HospitalApiError('ERR_INSTALL_DOCKER_STALE_VOLUMES', { volumes: refused.join(', '), dir: installPaths(dir).docker });
  }
}

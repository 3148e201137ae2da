/**
 * The secrets install generates for the container runtimes (RuntimeProfile.secrets): the docker
 * runtime and the swarm runtime make the same ones, kept across reinstalls.
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { InstallPaths } from '../../install-dir/layout.js';
import { METRICS_TOKEN_FILE, metricsTokenFileText } from '../../install-dir/metrics-token.js';
import { DOOR_TOKEN_FILE, newDoorToken, readDoorToken } from './door-token.js';

function password(): string {
  return randomBytes(24).toString('base64url');
}

/** Kong's and HAPI's database passwords (an existing one kept), the FHIR door's token and the API's metrics token, by file name under secrets/. */
export function containerSecrets(paths: InstallPaths): Record<string, string> {
  const keep = (name: string): string => {
    const p = join(paths.secrets, name);
    return existsSync(p) ? readFileSync(p, 'utf8').trim() : password();
  };
  const kong = keep('kong-pg-password');
  const hapi = keep('hapi-pg-password');
  return {
    'kong-pg-password': kong + '\n',
    'hapi-pg-password': hapi + '\n',
    // the FHIR door's token (door-token.ts), copied to the fhir-door container before each start
    [DOOR_TOKEN_FILE]: (readDoorToken(paths) ?? newDoorToken()) + '\n',
    // the token the API's /metrics requires (issue 45), copied to the API's folder by container-files.ts
    [METRICS_TOKEN_FILE]: metricsTokenFileText(paths),
    // Kong and HAPI read these passwords from files (KONG_PG_PASSWORD_FILE, a Spring
    // configtree) that the docker runtime copies under <dir>/docker/ before each start (swarm: swarm/secrets.ts).
  };
}

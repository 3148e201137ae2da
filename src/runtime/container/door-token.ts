/**
 * The FHIR door's token (src/fhir-door/), owned here: generated at install (32 random bytes,
 * base64url), kept in <install dir>/secrets/fhir-door-token (0600, like the database passwords),
 * created by `up`/`upgrade` for an install made before the door existed, copied to the door's
 * container by container-files.ts, and read by the CLI on this host for requests to the FHIR port
 * (profile.ts fhirClientHeaders). Never in an environment variable, a log or an error.
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { InstallPaths } from '../../install-dir/layout.js';
import { writeSecretFile } from '../../util/atomic-write.js';

export const DOOR_TOKEN_FILE = 'fhir-door-token';

export function doorTokenPath(paths: InstallPaths): string {
  return join(paths.secrets, DOOR_TOKEN_FILE);
}

export function newDoorToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The token, or null when this install has none yet (made before the door: HAPI itself is published). */
export function readDoorToken(paths: InstallPaths): string | null {
  const path = doorTokenPath(paths);
  if (!existsSync(path)) return null;
  const token = readFileSync(path, 'utf8').trim();
  return token === '' ? null : token;
}

/** What a FHIR client on the host sends through the door: the token, or nothing before the door has one. */
export function doorClientHeaders(paths: InstallPaths): Record<string, string> {
  const token = readDoorToken(paths);
  return token === null ? {} : { authorization: `Bearer ${token}` };
}

/** The token, kept or made (day two: an install from before the door gets one on its next `up`). */
export function ensureDoorToken(paths: InstallPaths): string {
  const kept = readDoorToken(paths);
  if (kept !== null) return kept;
  const token = newDoorToken();
  writeSecretFile(doorTokenPath(paths), token + '\n');
  return token;
}

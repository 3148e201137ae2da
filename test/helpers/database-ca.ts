/**
 * The hospital's database CA as `install --database-ca` reads it: a PEM file, made once per
 * test file (a temporary directory, removed with the others by removeTempDirs).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateCa } from '../../src/tls/pki.js';
import type { RuntimeFlags } from '../../src/runtime/profile.js';
import { tempDir } from './tmp.js';

let file: string | null = null;

export function databaseCaFile(): string {
  if (file === null) {
    file = join(tempDir('hapi-dbca-'), 'database-ca.pem');
    writeFileSync(file, generateCa({ commonName: 'Hospital database CA' }).certPem);
  }
  return file;
}

/** `flags` with --database-ca added when they name a database outside the swarm (which needs one). */
export function withDatabaseCa(flags: RuntimeFlags): RuntimeFlags {
  return flags.kongDatabaseUrl || flags.fhirDatabaseUrl ? { databaseCa: databaseCaFile(), ...flags } : flags;
}

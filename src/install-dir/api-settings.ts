/**
 * Both runtimes hold the Hospital API back until the hospital has created its
 * key and named the platform: these are the settings it cannot start without.
 */
import { readEnvFile } from '../util/env-file.js';
import { installPaths } from './layout.js';

export const API_START_SETTINGS = ['FHIR_API_KEY', 'PLATFORM_API_URL'] as const;

/** The start settings still empty in <dir>/hospital-api.env. */
export function missingApiSettings(dir: string): string[] {
  const env = readEnvFile(installPaths(dir).apiEnv);
  return API_START_SETTINGS.filter((k) => !env[k]);
}

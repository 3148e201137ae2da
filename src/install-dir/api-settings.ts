/**
 * The Hospital API's start settings in <dir>/hospital-api.env. Both runtimes
 * hold the API back until the hospital has created its key, named the platform
 * and named the platform's identifier system (or said explicitly that any
 * system may match): these are the settings it cannot start without.
 */
import { readEnvFile } from '../util/env-file.js';
import { installPaths } from './layout.js';

export const API_START_SETTINGS = ['FHIR_API_KEY', 'PLATFORM_API_URL', 'PLATFORM_IDENTIFIER_SYSTEM'] as const;

/**
 * Set to `true` by `install --any-identifier-system`: the explicit choice that a
 * care id may match an identifier of any system, in place of PLATFORM_IDENTIFIER_SYSTEM.
 */
export const ANY_IDENTIFIER_SYSTEM = 'PLATFORM_ANY_IDENTIFIER_SYSTEM';

/**
 * A FHIR Identifier.system is a uri (http://hl7.org/fhir/R4/datatypes-definitions.html#Identifier.system);
 * the platform's must be absolute: a scheme (RFC 3986), then no spaces or control characters. At most 1024 characters.
 */
export function isIdentifierSystem(value: string): boolean {
  return value.length <= 1024 && /^[A-Za-z][A-Za-z0-9+.-]*:[^\s\x00-\x1f\x7f]+$/.test(value);
}

/** The start settings still empty in <dir>/hospital-api.env. */
export function missingApiSettings(dir: string): string[] {
  const env = readEnvFile(installPaths(dir).apiEnv);
  const anySystem = env[ANY_IDENTIFIER_SYSTEM]?.trim().toLowerCase() === 'true';
  return API_START_SETTINGS.filter((k) => !env[k]?.trim() && !(k === 'PLATFORM_IDENTIFIER_SYSTEM' && anySystem));
}

/** How to set each missing start setting, for a message that names the command. */
export function apiSettingsAdvice(dir: string, missing: string[]): string[] {
  const root = installPaths(dir).root;
  const advice: string[] = [];
  if (missing.includes('FHIR_API_KEY')) advice.push(`hospital-api consumer create <name> --write-env --dir ${root}`);
  if (missing.includes('PLATFORM_API_URL')) advice.push(`hospital-api install --dir ${root} --platform-url <the platform API base>`);
  if (missing.includes('PLATFORM_IDENTIFIER_SYSTEM')) {
    advice.push(`hospital-api install --dir ${root} --identifier-system <the platform's identifier system URI>`);
  }
  return advice;
}

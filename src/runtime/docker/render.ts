/**
 * Renders templates/compose.yaml into <install dir>/docker/compose.yaml.
 * String values are written as JSON strings (valid YAML double-quoted
 * scalars), so a path with spaces or colons cannot break the file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { parse } from 'yaml';
import { PROJECT_ROOT, VERSION } from '../../version.js';
import type { InstallConfig } from '../install-config.js';
import { installPaths } from '../layout.js';

/** Pinned images (issue 5: Kong 3.9, a pinned HAPI, Postgres for both). */
export const IMAGES = Object.freeze({
  kong: 'kong:3.9.1',
  postgres: 'postgres:16.4-alpine',
  hapi: 'hapiproject/hapi:v7.4.0',
});

export const TEMPLATE_PATH = join(PROJECT_ROOT, 'templates', 'compose.yaml');

/** A compose project name per install directory, stable across reruns. */
export function projectName(dir: string): string {
  const hash = createHash('sha256').update(installPaths(dir).root).digest('hex').slice(0, 8);
  return `hospital-api-${hash}`;
}

export function composeFile(dir: string): string {
  return join(installPaths(dir).docker, 'compose.yaml');
}

export function renderTemplate(template: string, values: Record<string, string | number>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`template placeholder ${whole} has no value`);
    return typeof value === 'number' ? String(value) : JSON.stringify(value);
  });
}

/** The rendered compose file as text; parsed once to be sure it is YAML. */
export function renderCompose(dir: string, config: InstallConfig, template = readFileSync(TEMPLATE_PATH, 'utf8')): string {
  const text = renderTemplate(template, {
    project: projectName(dir),
    kongImage: IMAGES.kong,
    postgresImage: IMAGES.postgres,
    hapiImage: IMAGES.hapi,
    apiImage: `hospital-api:${VERSION}`,
    repoRoot: PROJECT_ROOT.replace(/\/$/, ''),
    gatewayHttpsPort: config.ports.gatewayHttps,
    fhirPort: config.ports.fhir,
    apiPort: config.ports.api,
    uid: process.getuid?.() ?? 1000,
    gid: process.getgid?.() ?? 1000,
  });
  parse(text);
  return text;
}

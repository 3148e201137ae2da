/**
 * <dir>/demo/demo.json: the settings only a DEMO install has (the platform
 * stand-in's port), kept beside the install and never in install.json. The
 * demo writes it; the native runtime reads it to run the stand-in.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonFile } from '../util/json-file.js';
import { installPaths } from './layout.js';

/** Demo-only settings kept beside the install (never in install.json). */
export interface DemoSettings {
  platformPort: number;
}

export function demoSettingsPath(dir: string): string {
  return join(installPaths(dir).root, 'demo', 'demo.json');
}

const DEMO_SETTINGS_SCHEMA = {
  type: 'object',
  required: ['platformPort'],
  properties: { platformPort: { type: 'integer', minimum: 1, maximum: 65535 } },
} as const;

/** @throws ERR_FILE_READ naming the file and the field when demo.json is damaged */
export function readDemoSettings(dir: string): DemoSettings | null {
  const path = demoSettingsPath(dir);
  if (!existsSync(path)) return null;
  return readJsonFile<DemoSettings>(path, DEMO_SETTINGS_SCHEMA);
}

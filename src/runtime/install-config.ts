/**
 * install.json: what `install` decided, read by every later command. It holds
 * no secret (those live in hospital-api.env and secrets/, mode 0600).
 */
import { existsSync } from 'node:fs';
import { HospitalApiError } from '../errors/index.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { readJsonFile } from '../util/json-file.js';
import { installPaths } from './layout.js';

export type RuntimeName = 'docker' | 'native';

/** Ports on the node host (spec §1: API 9000, FHIR 8080, gateway HTTPS; admin 8001 stays inside). */
export interface InstallPorts {
  api: number;
  fhir: number;
  gatewayHttp: number;
  gatewayHttps: number;
  /** Native: loopback only. Docker: inside the kong container only, never published. */
  gatewayAdmin: number;
  /** Hospital API Prometheus metrics, loopback. */
  metrics: number;
}

export const DEFAULT_PORTS: Readonly<InstallPorts> = Object.freeze({
  api: 9000,
  fhir: 8080,
  gatewayHttp: 8000,
  gatewayHttps: 8443,
  gatewayAdmin: 8001,
  metrics: 9464,
});

export interface InstallConfig {
  formatVersion: 1;
  runtime: RuntimeName;
  /** Names and addresses the gateway certificate covers; the first is used in URLs. */
  hosts: string[];
  ports: InstallPorts;
  /** Base of the platform's API, or null until the hospital fills it in. */
  platformApiUrl: string | null;
  /** Whether the CA key is ours (generated) or the hospital brought its own CA. */
  caGenerated: boolean;
  /** CORS settings of the fhir-api service. */
  cors: { origins: string[]; headers: string[] | null; exposedHeaders: string[] | null };
  toolkitVersion: string;
  installedAt: string;
  /** Demo installs are labelled so no production path mistakes them for real ones. */
  demo: boolean;
}

const port = { type: 'integer', minimum: 1, maximum: 65535 } as const;
const strings = { type: 'array', items: { type: 'string' } } as const;

/** install.json as `install` writes it; anything else is refused naming the field. */
export const INSTALL_CONFIG_SCHEMA = {
  type: 'object',
  required: ['formatVersion', 'runtime', 'hosts', 'ports', 'platformApiUrl', 'caGenerated', 'cors', 'toolkitVersion', 'installedAt', 'demo'],
  properties: {
    formatVersion: { const: 1 },
    runtime: { enum: ['docker', 'native'] },
    hosts: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1, maxLength: 253 } },
    ports: {
      type: 'object',
      required: ['api', 'fhir', 'gatewayHttp', 'gatewayHttps', 'gatewayAdmin', 'metrics'],
      properties: { api: port, fhir: port, gatewayHttp: port, gatewayHttps: port, gatewayAdmin: port, metrics: port },
    },
    platformApiUrl: { type: ['string', 'null'] },
    caGenerated: { type: 'boolean' },
    cors: {
      type: 'object',
      required: ['origins', 'headers', 'exposedHeaders'],
      properties: { origins: strings, headers: { type: ['array', 'null'], items: { type: 'string' } }, exposedHeaders: { type: ['array', 'null'], items: { type: 'string' } } },
    },
    toolkitVersion: { type: 'string' },
    installedAt: { type: 'string' },
    demo: { type: 'boolean' },
  },
} as const;

/** @throws ERR_RUNTIME_NOT_INSTALLED when there is none, ERR_FILE_READ naming the file and field when it is damaged */
export function readInstallConfig(dir: string): InstallConfig {
  const path = installPaths(dir).installJson;
  if (!existsSync(path)) throw new HospitalApiError('ERR_RUNTIME_NOT_INSTALLED', { dir: installPaths(dir).root });
  return readJsonFile<InstallConfig>(path, INSTALL_CONFIG_SCHEMA);
}

export function writeInstallConfig(dir: string, config: InstallConfig): void {
  writeFileAtomic(installPaths(dir).installJson, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
}

/** The public URLs of an installation, derived in one place. */
export function endpoints(config: InstallConfig) {
  const host = config.hosts[0] ?? 'localhost';
  const h = host.includes(':') ? `[${host}]` : host;
  return {
    apiBase: `http://${h}:${config.ports.api}`,
    fhirBase: `http://${h}:${config.ports.fhir}/fhir`,
    gatewayHttps: `https://${h}:${config.ports.gatewayHttps}`,
    gatewayHttp: `http://${h}:${config.ports.gatewayHttp}`,
    keyAuthBase: `https://${h}:${config.ports.gatewayHttps}/fhir-api-key-auth`,
    /** Native only: the admin API on loopback. */
    nativeAdmin: `http://127.0.0.1:${config.ports.gatewayAdmin}`,
  };
}

/**
 * install.json: what `install` decided, read by every later command. It holds
 * no secret (those live in hospital-api.env and secrets/, mode 0600).
 */
import { readFileSync } from 'node:fs';
import { HospitalApiError } from '../errors/index.js';
import { writeFileAtomic } from '../util/atomic-write.js';
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
  /** Docker runtime only: images and the host addresses ports are published on (absent: the defaults). */
  docker?: DockerSettings;
}

/** What `install` chose for the docker runtime; kept so a rerun without flags changes nothing. */
export interface DockerSettings {
  /** Image references (tag or digest); each overridable by an install flag. `api: null` builds the repository's Dockerfile. */
  images: { kong: string; hapi: string; postgres: string; api: string | null };
  /** Host address the gateway HTTPS and Hospital API ports are published on. */
  bindAddress: string;
  /** Host address the FHIR port (unauthenticated full FHIR API) is published on: 127.0.0.1 unless opened explicitly. */
  fhirBindAddress: string;
}

export function readInstallConfig(dir: string): InstallConfig {
  const path = installPaths(dir).installJson;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new HospitalApiError(
      'ERR_RUNTIME_NOT_INSTALLED',
      { dir: installPaths(dir).root },
      { cause: err },
    );
  }
  try {
    const config = JSON.parse(text) as InstallConfig;
    if (config.formatVersion !== 1) throw new Error(`unsupported formatVersion ${String(config.formatVersion)}`);
    return config;
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as Error).message }, { cause: err });
  }
}

export function writeInstallConfig(dir: string, config: InstallConfig): void {
  writeFileAtomic(installPaths(dir).installJson, JSON.stringify(config, null, 2) + '\n');
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

/**
 * install.json: what `install` decided, read by every later command. It holds
 * no secret (those live in hospital-api.env and secrets/, mode 0600).
 */
import { existsSync, readFileSync } from 'node:fs';
import { HospitalApiError } from '../errors/index.js';
import { writeFileAtomic } from '../util/atomic-write.js';
import { parseJsonFile } from '../util/json-file.js';
import { installPaths } from './layout.js';

/** The runtimes an install can be made with (src/runtime/ gives each one's profile). */
export const RUNTIME_NAMES = ['docker', 'native', 'swarm'] as const;

export type RuntimeName = (typeof RUNTIME_NAMES)[number];

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
  /**
   * The gateway's status listener (Kong's status_listen: Prometheus /metrics), on
   * 127.0.0.1 of the node host, with `install --monitoring` only. Absent in an
   * install.json written before issue 26: the default then.
   */
  gatewayStatus?: number;
}

export const DEFAULT_PORTS: Readonly<InstallPorts> = Object.freeze({
  api: 9000,
  fhir: 8080,
  gatewayHttp: 8000,
  gatewayHttps: 8443,
  gatewayAdmin: 8001,
  metrics: 9464,
  // Kong 3.6+'s status_listen default port (kong/templates/kong_defaults.lua).
  gatewayStatus: 8007,
});

/** Where the gateway's status listener (Prometheus /metrics) is published on the node host's loopback, or null without `install --monitoring`. */
export function gatewayStatusPort(config: Pick<InstallConfig, 'ports' | 'monitoring'>): number | null {
  return config.monitoring === true ? (config.ports.gatewayStatus ?? (DEFAULT_PORTS.gatewayStatus as number)) : null;
}

/**
 * The install directory's format. 2 (issue 15): every secret file 0600, settings
 * rendered for this directory, `upgrades` history. Older directories are migrated
 * by `hospital-api upgrade` (src/maintenance/upgrade.ts), never read as they are.
 */
export const INSTALL_FORMAT = 2;

export interface InstallConfig {
  formatVersion: number;
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
  /** Who runs the native components: the built-in supervisor (`up`, default) or systemd (`hospital-api systemd --managed`). */
  supervisor?: 'builtin' | 'systemd';
  /** Formats this directory was upgraded through (`hospital-api upgrade`). */
  upgrades?: Array<{ from: number; to: number; toolkitVersion: string; at: string; backup: string | null }>;
  /** Docker runtime only: images and the host addresses ports are published on (absent: the defaults). */
  docker?: DockerSettings;
  /** Docker Swarm runtime only (issue 29): images, replicas, where the databases are, the overlay's encryption. */
  swarm?: SwarmSettings;
  /** `install --monitoring`: the gateway's status listener is published on loopback and <dir>/monitoring/ holds a Prometheus scrape config. */
  monitoring?: boolean;
  /** `install --verify-every`: seconds between scheduled acceptance runs (`verify --scheduled`, issue 46); absent: off. */
  verifyEvery?: number;
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

/** Where a Swarm install's database is: on the one node carrying its label (`node`: the node install labels, null: one labelled already), or outside the swarm (`url`, never with a password). */
export type SwarmDatabase = { node: string | null } | { url: string };

/** What `install` chose for the Docker Swarm runtime; kept so a rerun without flags changes nothing. */
export interface SwarmSettings {
  /** As the docker runtime's; `api: null` is the tag the repository's Dockerfile is built as, which every node must hold. */
  images: { kong: string; hapi: string; postgres: string; api: string | null };
  /** Tasks of each replicated service, 1-9. */
  replicas: { gateway: number; fhir: number; api: number };
  databases: { kong: SwarmDatabase; fhir: SwarmDatabase };
  /** IPsec between nodes on the stack's overlay network (`--overlay-encryption`, on unless turned off). */
  overlayEncryption: boolean;
  /**
   * The CA certificates (PEM) the hospital's Postgres server is verified against (`--database-ca`):
   * needed with a database outside the swarm, whose connections leave the stack's network. Absent: none.
   */
  databaseCa?: string | null;
}

const port = { type: 'integer', minimum: 1, maximum: 65535 } as const;
const replicas = { type: 'integer', minimum: 1, maximum: 9 } as const;
const swarmDatabase = {
  oneOf: [
    { type: 'object', required: ['node'], properties: { node: { type: ['string', 'null'], minLength: 1 } }, additionalProperties: false },
    { type: 'object', required: ['url'], properties: { url: { type: 'string', minLength: 1 } }, additionalProperties: false },
  ],
} as const;
const images = {
  type: 'object',
  required: ['kong', 'hapi', 'postgres', 'api'],
  properties: { kong: { type: 'string' }, hapi: { type: 'string' }, postgres: { type: 'string' }, api: { type: ['string', 'null'] } },
} as const;
const strings = { type: 'array', items: { type: 'string' } } as const;

/** install.json as `install` writes it; anything else is refused naming the field. */
export const INSTALL_CONFIG_SCHEMA = {
  type: 'object',
  required: ['formatVersion', 'runtime', 'hosts', 'ports', 'platformApiUrl', 'caGenerated', 'cors', 'toolkitVersion', 'installedAt', 'demo'],
  properties: {
    formatVersion: { type: 'integer' },
    runtime: { enum: RUNTIME_NAMES },
    hosts: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1, maxLength: 253 } },
    ports: {
      type: 'object',
      required: ['api', 'fhir', 'gatewayHttp', 'gatewayHttps', 'gatewayAdmin', 'metrics'],
      properties: { api: port, fhir: port, gatewayHttp: port, gatewayHttps: port, gatewayAdmin: port, metrics: port, gatewayStatus: port },
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
    supervisor: { enum: ['builtin', 'systemd'] },
    monitoring: { type: 'boolean' },
    verifyEvery: { type: 'integer', minimum: 30, maximum: 604800 },
    docker: {
      type: 'object',
      required: ['images', 'bindAddress', 'fhirBindAddress'],
      properties: {
        images,
        bindAddress: { type: 'string', minLength: 1 },
        fhirBindAddress: { type: 'string', minLength: 1 },
      },
    },
    // additive: an install.json without it is read as before (the format stays 2)
    swarm: {
      type: 'object',
      required: ['images', 'replicas', 'databases', 'overlayEncryption'],
      properties: {
        images,
        replicas: { type: 'object', required: ['gateway', 'fhir', 'api'], properties: { gateway: replicas, fhir: replicas, api: replicas } },
        databases: { type: 'object', required: ['kong', 'fhir'], properties: { kong: swarmDatabase, fhir: swarmDatabase } },
        overlayEncryption: { type: 'boolean' },
        databaseCa: { type: ['string', 'null'] },
      },
    },
    upgrades: {
      type: 'array',
      items: {
        type: 'object',
        required: ['from', 'to', 'toolkitVersion', 'at', 'backup'],
        properties: { from: { type: 'integer' }, to: { type: 'integer' }, toolkitVersion: { type: 'string' }, at: { type: 'string' }, backup: { type: ['string', 'null'] } },
      },
    },
  },
} as const;

/** @throws ERR_RUNTIME_NOT_INSTALLED when there is none, ERR_FILE_READ naming the file and field when it is damaged */
export function readInstallConfig(dir: string): InstallConfig {
  const path = installPaths(dir).installJson;
  if (!existsSync(path)) throw new HospitalApiError('ERR_RUNTIME_NOT_INSTALLED', { dir: installPaths(dir).root });
  let config: InstallConfig;
  try {
    config = JSON.parse(readFileSync(path, 'utf8')) as InstallConfig;
  } catch (err) {
    const detail = err instanceof SyntaxError ? `not valid JSON (${err.message})` : ((err as NodeJS.ErrnoException).code ?? (err as Error).message);
    throw new HospitalApiError('ERR_FILE_READ', { path, detail }, { cause: err });
  }
  const found = config?.formatVersion;
  if (found !== INSTALL_FORMAT) {
    const older = typeof found === 'number' && Number.isInteger(found) && found >= 1 && found < INSTALL_FORMAT;
    throw new HospitalApiError('ERR_UPGRADE_FORMAT', {
      dir: installPaths(dir).root, found: String(found), known: INSTALL_FORMAT,
      hint: older
        ? `Stop it with the toolkit that made it, then run \`hospital-api upgrade --dir ${installPaths(dir).root}\` (it takes a backup first).`
        : 'Use the toolkit release that made this directory, or a newer one.',
    });
  }
  // The format is known: every field must be what `install` writes, else the file and field are named.
  return parseJsonFile<InstallConfig>(path, JSON.stringify(config), INSTALL_CONFIG_SCHEMA);
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

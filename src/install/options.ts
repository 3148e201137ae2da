/**
 * `install` flags → a validated plan. Everything is checked here, before any
 * file is written, so bad input changes nothing (issue 5).
 */
import { isIP } from 'node:net';
import { existsSync } from 'node:fs';
import { HospitalApiError } from '../errors/index.js';
import { DOCKER_FLAGS, SWARM_FLAGS, type DockerFlags, type PortFlags, type SwarmFlags } from './port-flags.js';
import { DEFAULT_PORTS, type InstallConfig, type InstallPorts, type RuntimeName } from '../install-dir/install-config.js';
import { isRuntimeName, RUNTIME_NAMES } from '../runtime/profiles.js';
import { isIdentifierSystem } from '../install-dir/api-settings.js';

export interface InstallFlags extends PortFlags, DockerFlags, SwarmFlags {
  runtime?: string;
  dir?: string;
  host?: string[];
  ca?: string;
  cert?: string;
  key?: string;
  caKey?: string;
  signerCert?: string;
  signerKey?: string;
  /** The audit log's seal certificate and key (issue 46), when the CA's key is not given: subject CN "hospital-api audit seal". */
  auditSealCert?: string;
  auditSealKey?: string;
  generateCa?: boolean;
  platformUrl?: string;
  /** PLATFORM_IDENTIFIER_SYSTEM: the platform's identifier system, part of every patient match. */
  identifierSystem?: string;
  /** PLATFORM_ANY_IDENTIFIER_SYSTEM=true: any system may match (explicit, never the default). */
  anyIdentifierSystem?: boolean;
  corsOrigin?: string[];
  corsHeader?: string[];
  corsExposedHeader?: string[];
  start?: boolean;
  demo?: boolean;
  /** native: who runs the components (a new install's default: $HOSPITAL_API_SUPERVISOR, which the Debian package sets where systemd runs, else builtin). */
  supervisor?: string;
  /** `--monitoring` / `--no-monitoring`: the gateway's status listener on loopback and a Prometheus scrape config (absent: keep the previous choice). */
  monitoring?: boolean;
  /** `--verify-every <duration>` (30s … 7d, or `off`): scheduled acceptance (issue 46); absent keeps the previous choice. */
  verifyEvery?: string;
}

/** The platform's identifier system, or the explicit choice that any system may match. */
export type IdentifierChoice = { system: string } | { any: true };

export type TlsChoice =
  | { mode: 'generate' }
  | { mode: 'provided'; ca: string; cert: string; key: string; caKey?: string; signerCert?: string; signerKey?: string; auditSealCert?: string; auditSealKey?: string }
  | { mode: 'keep' };

export interface InstallPlan {
  runtime: RuntimeName | null;
  hosts: string[];
  ports: InstallPorts;
  platformApiUrl: string | null;
  /** What hospital-api.env gets for the patient match; null keeps what it holds. */
  identifier: IdentifierChoice | null;
  cors: { origins: string[]; headers: string[] | null; exposedHeaders: string[] | null };
  tls: TlsChoice;
  start: boolean;
  demo: boolean;
  /** native: who runs the components; null keeps what a previous install chose (else builtin). */
  supervisor: 'builtin' | 'systemd' | null;
  /** Docker flags as given (validated); merged with the previous install's in run.ts. */
  docker: DockerFlags;
  /** Every runtime flag given, by key, with its name on the command line: the runtime's profile checks and takes them. */
  runtimeFlags: Array<{ key: (typeof RUNTIME_FLAGS)[number]['key']; flag: string; value: string }>;
  /** The gateway status listener and a Prometheus scrape config (docs/operations.md "Monitoring"). */
  monitoring: boolean;
  /** Seconds between scheduled acceptance runs (`verify --scheduled`), or null: off. */
  verifyEvery: number | null;
}

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

function bad(name: string, detail: string): HospitalApiError {
  return new HospitalApiError('ERR_INSTALL_BAD_OPTION', { name, detail });
}

function port(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d{1,5}$/.test(value) || n < 1 || n > 65535) throw bad(flag, `expected a port 1-65535, got "${value}"`);
  return n;
}

function parsePorts(f: InstallFlags, base: InstallPorts): InstallPorts {
  const ports: InstallPorts = {
    api: port('--api-port', f.apiPort, base.api),
    fhir: port('--fhir-port', f.fhirPort, base.fhir),
    gatewayHttp: port('--gateway-http-port', f.gatewayHttpPort, base.gatewayHttp),
    gatewayHttps: port('--gateway-https-port', f.gatewayHttpsPort, base.gatewayHttps),
    gatewayAdmin: port('--gateway-admin-port', f.gatewayAdminPort, base.gatewayAdmin),
    metrics: port('--metrics-port', f.metricsPort, base.metrics),
    gatewayStatus: port('--gateway-status-port', f.gatewayStatusPort, base.gatewayStatus ?? (DEFAULT_PORTS.gatewayStatus as number)),
  };
  const seen = new Map<number, string>();
  for (const [name, value] of Object.entries(ports)) {
    const other = seen.get(value);
    if (other) throw bad('ports', `${name} and ${other} both use port ${value}`);
    seen.set(value, name);
  }
  return ports;
}

function parseHosts(values: string[] | undefined, base: string[]): string[] {
  const hosts = values?.length ? values : base;
  for (const h of hosts) {
    if (!isIP(h) && !HOSTNAME.test(h)) throw bad('--host', `"${h}" is neither a host name nor an IP address`);
  }
  return [...new Set(hosts)];
}

function parseUrl(value: string | undefined): string | null {
  if (value === undefined) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad('--platform-url', `"${value}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw bad('--platform-url', 'must be http(s)');
  if (url.username || url.password) throw bad('--platform-url', 'must not carry credentials');
  return value.replace(/\/+$/, '');
}

function parseIdentifier(f: InstallFlags): IdentifierChoice | null {
  if (f.identifierSystem !== undefined && f.anyIdentifierSystem) {
    throw bad('--identifier-system', 'cannot be combined with --any-identifier-system');
  }
  if (f.anyIdentifierSystem) return { any: true };
  if (f.identifierSystem === undefined) return null;
  if (!isIdentifierSystem(f.identifierSystem)) {
    throw bad('--identifier-system', `"${f.identifierSystem}" is not an absolute URI (such as urn:oid:… or https://…)`);
  }
  return { system: f.identifierSystem };
}

function readable(flag: string, path: string | undefined): string | undefined {
  if (path !== undefined && !existsSync(path)) throw bad(flag, `${path} does not exist`);
  return path;
}

function parseTls(f: InstallFlags): TlsChoice {
  const provided = [f.ca, f.cert, f.key].filter((v) => v !== undefined).length;
  if (f.generateCa && provided > 0) {
    throw new HospitalApiError('ERR_INSTALL_TLS_OPTIONS', { detail: '--generate-ca cannot be combined with --ca/--cert/--key' });
  }
  if (provided > 0 && provided < 3) {
    throw new HospitalApiError('ERR_INSTALL_TLS_OPTIONS', { detail: '--ca, --cert and --key go together' });
  }
  if ((f.signerCert === undefined) !== (f.signerKey === undefined)) {
    throw new HospitalApiError('ERR_INSTALL_TLS_OPTIONS', { detail: '--signer-cert and --signer-key go together' });
  }
  if (provided === 3) {
    return {
      mode: 'provided',
      ca: readable('--ca', f.ca) as string,
      cert: readable('--cert', f.cert) as string,
      key: readable('--key', f.key) as string,
      ...(f.caKey ? { caKey: readable('--ca-key', f.caKey) as string } : {}),
      ...(f.signerCert ? { signerCert: readable('--signer-cert', f.signerCert) as string } : {}),
      ...(f.signerKey ? { signerKey: readable('--signer-key', f.signerKey) as string } : {}),
      ...(f.auditSealCert ? { auditSealCert: readable('--audit-seal-cert', f.auditSealCert) as string } : {}),
      ...(f.auditSealKey ? { auditSealKey: readable('--audit-seal-key', f.auditSealKey) as string } : {}),
    };
  }
  return f.generateCa ? { mode: 'generate' } : { mode: 'keep' };
}

/** An image reference: [registry/]name[:tag][@sha256:digest], lower-case name (distribution/reference grammar, simplified). */
const IMAGE_REF = /^(?:[a-z0-9.-]+(?::\d+)?\/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/;

function parseDockerFlags(f: InstallFlags): DockerFlags {
  const out: DockerFlags = {};
  for (const key of ['bindAddress', 'fhirBindAddress'] as const) {
    const v = f[key];
    if (v === undefined) continue;
    if (!isIP(v)) throw bad(key === 'bindAddress' ? '--bind-address' : '--fhir-bind-address', `"${v}" is not an IP address`);
    out[key] = v;
  }
  for (const key of ['kongImage', 'hapiImage', 'postgresImage', 'apiImage'] as const) {
    const v = f[key];
    if (v === undefined) continue;
    if (!IMAGE_REF.test(v)) throw bad(`--${key.replace('Image', '')}-image`, `"${v}" is not an image reference`);
    out[key] = v;
  }
  return out;
}

/** The flags of every runtime but the ports (install's own), one list. */
export const RUNTIME_FLAGS = [...DOCKER_FLAGS, ...SWARM_FLAGS] as const;

function givenRuntimeFlags(f: InstallFlags): InstallPlan['runtimeFlags'] {
  return RUNTIME_FLAGS.flatMap(({ key, flag }) => {
    const value = f[key];
    return value === undefined ? [] : [{ key, flag, value }];
  });
}

function list(values: string[] | undefined): string[] | null {
  return values?.length ? values : null;
}

/**
 * Flags not given keep what a previous install chose (`previous`), so a rerun
 * without flags changes nothing.
 * @throws ERR_INSTALL_BAD_OPTION, ERR_INSTALL_TLS_OPTIONS
 */
export function parseInstallFlags(f: InstallFlags, previous: InstallConfig | null = null): InstallPlan {
  let runtime: RuntimeName | null = null;
  if (f.runtime !== undefined) {
    if (!isRuntimeName(f.runtime)) throw bad('--runtime', `expected one of ${RUNTIME_NAMES.join(', ')}`);
    runtime = f.runtime;
  }
  const prevCors = previous?.cors;
  // The original deployment allowed every origin; keep that default, configurable.
  const origins = f.corsOrigin?.length ? f.corsOrigin : (prevCors?.origins ?? ['*']);
  return {
    runtime,
    hosts: parseHosts(f.host, previous?.hosts ?? ['localhost']),
    ports: parsePorts(f, previous?.ports ?? DEFAULT_PORTS),
    platformApiUrl: parseUrl(f.platformUrl) ?? previous?.platformApiUrl ?? null,
    identifier: parseIdentifier(f),
    cors: {
      origins,
      headers: list(f.corsHeader) ?? prevCors?.headers ?? null,
      exposedHeaders: list(f.corsExposedHeader) ?? prevCors?.exposedHeaders ?? null,
    },
    tls: parseTls(f),
    start: f.start !== false,
    demo: f.demo === true || previous?.demo === true,
    supervisor: parseSupervisor('--supervisor', f.supervisor),
    docker: parseDockerFlags(f),
    runtimeFlags: givenRuntimeFlags(f),
    monitoring: f.monitoring ?? previous?.monitoring === true,
    verifyEvery: f.verifyEvery === undefined ? (previous?.verifyEvery ?? null) : parseVerifyEvery(f.verifyEvery),
  };
}

/** Bounds of `--verify-every`: a run takes seconds, so less than 30 s would overlap; more than a week is not continuous. */
export const VERIFY_EVERY_BOUNDS = Object.freeze({ minS: 30, maxS: 7 * 86400 });

/** `--verify-every`: `<n>s`, `<n>m`, `<n>h` or `<n>d` (30s … 7d), or `off`. @throws ERR_USAGE */
export function parseVerifyEvery(value: string): number | null {
  if (value === 'off') return null;
  const m = /^(\d{1,7})([smhd])$/.exec(value);
  const seconds = m ? Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's' | 'm' | 'h' | 'd'] : NaN;
  if (!(seconds >= VERIFY_EVERY_BOUNDS.minS && seconds <= VERIFY_EVERY_BOUNDS.maxS)) {
    throw bad('--verify-every', `expected a duration from 30s to 7d (e.g. 1h, 90m) or off, got "${value}"`);
  }
  return seconds;
}

export function parseSupervisor(name: string, value: string | undefined): 'builtin' | 'systemd' | null {
  if (value === undefined || value === '') return null;
  if (value !== 'builtin' && value !== 'systemd') throw bad(name, `expected builtin or systemd, got "${value}"`);
  return value;
}

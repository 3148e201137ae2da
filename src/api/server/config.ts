/**
 * Hospital API configuration (issue #2): the process environment over a .env
 * file, with command-line flags winning over both. Everything is validated
 * before the server listens; a bad value names its variable (exit 3).
 * No setting disables TLS verification.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP, type BlockList } from 'node:net';
import { resolve } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { readTokenFile } from '../../util/token-file.js';
import { signerRoleProblem } from '../../tls/cms-verify.js';
import { sealPairProblem } from '../audit/seal-key.js';
import { ANY_IDENTIFIER_SYSTEM, isIdentifierSystem } from '../../install-dir/api-settings.js';
import { mergedEnv } from '../../util/env-file.js';
import { blockListOf, parseIpOrCidr } from '../../util/ip-list.js';
import { parseListen, type ListenAddress } from '../../util/listen-address.js';

export type TrustProxy = boolean | number | string[];

/** Read once at start and frozen: nothing changes it while the server runs (a key reload swaps the FHIR access, src/api/fhir/fhir-access.ts). */
export interface ApiConfig {
  readonly host: string;
  readonly port: number;
  readonly platformApiUrl: URL;
  readonly platformValidateMethod: 'GET' | 'POST';
  /** PEM text of PLATFORM_CA_FILE, or null for the system store. */
  readonly platformCa: string | null;
  readonly platformTimeoutMs: number;
  readonly fhirBaseUrl: URL;
  readonly fhirApiKey: string;
  readonly fhirCa: string | null;
  readonly fhirTimeoutMs: number;
  readonly fhirPageSize: number;
  /**
   * The platform's identifier system (PLATFORM_IDENTIFIER_SYSTEM): the Patient
   * search is `identifier=<system>|<value>`. null only when the operator said
   * any system may match (--any-identifier-system, PLATFORM_ANY_IDENTIFIER_SYSTEM=true).
   */
  readonly identifierSystem: string | null;
  /** Caller allow-list; null allows every caller. */
  readonly allowedCallers: BlockList | null;
  readonly allowedCallersText: string[];
  readonly trustProxy: TrustProxy;
  readonly auditLog: string;
  /**
   * The certificate (of the install's CA) and key that sign the audit log's seals (issue 46):
   * AUDIT_SEAL_CERT_FILE and AUDIT_SEAL_KEY_FILE, both or neither; null: no seals.
   */
  readonly auditSeal: { certPem: string; keyPem: string; certFile: string; keyFile: string } | null;
  readonly maxPages: number;
  readonly maxResources: number;
  /** Metrics listener, or null when METRICS_LISTEN=off. */
  readonly metricsListen: ListenAddress | null;
  /**
   * The bearer token GET /metrics requires (METRICS_TOKEN_FILE, issue 45), or null: then any local account
   * that reaches the listener reads it.
   */
  readonly metricsToken: string | null;
  readonly logLevel: string;
  readonly shutdownGraceMs: number;
  readonly bodyLimit: number;
  /** POST /api/patients admitted at once (src/api/request/admission.ts); more wait in the queue. */
  readonly maxConcurrentRequests: number;
  /** Requests waiting for a slot; past it, 503 ERR_API_BUSY at once (0: no queue). */
  readonly queueLength: number;
  /** Longest wait for a slot; past it, 503 ERR_API_BUSY. */
  readonly queueTimeoutMs: number;
  /** Largest FHIR page read into memory (bytes). */
  readonly fhirMaxPageBytes: number;
  /** A caller that has not taken any of the response for this long is cut. */
  readonly sendTimeoutMs: number;
  /** Listener limits (every Hospital API listener, metrics included). */
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly maxConnections: number;
}

export interface ConfigFlags {
  host?: string;
  port?: string | number;
  envFile?: string;
  /** --any-identifier-system: a care id may match an identifier of any system (explicit, never the default). */
  anyIdentifierSystem?: boolean;
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function invalid(name: string, detail: string): HospitalApiError {
  return new HospitalApiError('ERR_CONFIG_INVALID', { name, detail });
}

function text(env: Env, name: string): string | undefined {
  const v = env[name]?.trim();
  return v ? v : undefined;
}

function required(env: Env, name: string): string {
  const v = text(env, name);
  if (v === undefined) throw new HospitalApiError('ERR_CONFIG_MISSING', { name });
  return v;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = text(env, name);
  if (v === undefined) return fallback;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw invalid(name, `expected an integer from ${min} to ${max}, got "${v}"`);
  }
  return Number(v);
}

function url(env: Env, name: string, schemes: string[]): URL {
  const v = required(env, name);
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw invalid(name, 'not an absolute URL');
  }
  if (!schemes.includes(u.protocol)) throw invalid(name, `scheme must be ${schemes.join(' or ')}`);
  if (u.username || u.password) throw invalid(name, 'credentials in the URL are not allowed');
  if (u.search || u.hash) throw invalid(name, 'query and fragment are not allowed');
  u.pathname = u.pathname.replace(/\/+$/, '');
  return u;
}

function pemFile(env: Env, name: string, cwd: string): string | null {
  const v = text(env, name);
  if (v === undefined) return null;
  let pem: string;
  try {
    pem = readFileSync(resolve(cwd, v), 'utf8');
  } catch (err) {
    throw invalid(name, `cannot read ${v}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw invalid(name, `${v} holds no PEM certificate`);
  return pem;
}

/**
 * The seal signer's certificate and key, read at start (a key that cannot sign stops the start: audit.ts),
 * with their files: the audit log reads them again after `cert renew` (src/api/audit/seal-key.ts).
 */
function auditSeal(env: Env, cwd: string): { certPem: string; keyPem: string; certFile: string; keyFile: string } | null {
  const certPem = pemFile(env, 'AUDIT_SEAL_CERT_FILE', cwd);
  const keyFile = text(env, 'AUDIT_SEAL_KEY_FILE');
  if ((certPem === null) !== (keyFile === undefined)) throw invalid(certPem === null ? 'AUDIT_SEAL_CERT_FILE' : 'AUDIT_SEAL_KEY_FILE', 'AUDIT_SEAL_CERT_FILE and AUDIT_SEAL_KEY_FILE go together');
  if (certPem === null || keyFile === undefined) return null;
  // Only the audit-seal certificate: its seals are the only ones audit verify accepts, and a record
  // signer here would put a key that signs ACCEPTED records in the internet-facing API (issue 46).
  let role: string | null;
  try {
    role = signerRoleProblem(new X509Certificate(certPem), 'audit-seal');
  } catch {
    throw invalid('AUDIT_SEAL_CERT_FILE', 'holds no readable certificate');
  }
  if (role) throw invalid('AUDIT_SEAL_CERT_FILE', `${role}: the API seals with tls/audit-seal.pem, never the record signer`);
  let keyPem: string;
  try {
    keyPem = readFileSync(resolve(cwd, keyFile), 'utf8');
  } catch (err) {
    throw invalid('AUDIT_SEAL_KEY_FILE', `cannot read ${keyFile}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  if (!keyPem.includes('PRIVATE KEY-----')) throw invalid('AUDIT_SEAL_KEY_FILE', `${keyFile} holds no PEM private key`);
  // the key must be the certificate's: another key would sign seals that no check accepts (a foreign seal to
  // `audit verify`), found only when an auditor looks; refused at start instead, as the reload after renew does
  const pair = sealPairProblem(certPem, keyPem);
  if (pair) throw invalid('AUDIT_SEAL_KEY_FILE', `${keyFile}: ${pair}`);
  return { certPem, keyPem, certFile: resolve(cwd, text(env, 'AUDIT_SEAL_CERT_FILE')!), keyFile: resolve(cwd, keyFile) };
}

/**
 * METRICS_TOKEN_FILE: the token Prometheus sends (its scrape config's `authorization.credentials_file` names the
 * same file, as node_exporter's web config names a password file). Refused when other accounts may read it
 * (mode o+r) or when it is empty: a token anyone can read protects nothing.
 */
function tokenFile(env: Env, name: string, cwd: string): string | null {
  const v = text(env, name);
  if (v === undefined) return null;
  try {
    return readTokenFile(resolve(cwd, v), v);
  } catch (err) {
    throw invalid(name, (err as Error).message);
  }
}

function callers(env: Env): { list: BlockList | null; entries: string[] } {
  const entries = (text(env, 'ALLOWED_CALLERS') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (entries.length === 0) return { list: null, entries };
  const ranges = entries.map((e) => {
    const range = parseIpOrCidr(e);
    if (!range) throw invalid('ALLOWED_CALLERS', `"${e}" is not an IP address or CIDR`);
    return range;
  });
  return { list: blockListOf(ranges), entries };
}

/** TRUST_PROXY: false (default), true, a hop count, or a comma list of proxy IPs/CIDRs (Fastify trustProxy). */
function trustProxy(env: Env): TrustProxy {
  const v = text(env, 'TRUST_PROXY');
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  if (/^\d+$/.test(v)) return Number(v);
  const entries = v.split(',').map((s) => s.trim()).filter(Boolean);
  for (const e of entries) {
    if (!parseIpOrCidr(e)) throw invalid('TRUST_PROXY', `"${e}" is not true, false, a hop count, an IP or a CIDR`);
  }
  return entries;
}

function bool(env: Env, name: string): boolean {
  const v = text(env, name)?.toLowerCase();
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  throw invalid(name, `expected true or false, got "${v}"`);
}

/**
 * PLATFORM_IDENTIFIER_SYSTEM, required: without it a care id equal to another
 * patient's hospital number or national id would match that patient. Only an
 * explicit --any-identifier-system (or PLATFORM_ANY_IDENTIFIER_SYSTEM=true,
 * which `install --any-identifier-system` writes) lets any system match.
 * @throws ERR_API_IDENTIFIER_SYSTEM_MISSING, ERR_CONFIG_INVALID
 */
function identifierSystem(env: Env, flags: ConfigFlags, envFile: string): string | null {
  const system = text(env, 'PLATFORM_IDENTIFIER_SYSTEM');
  const any = flags.anyIdentifierSystem === true || bool(env, ANY_IDENTIFIER_SYSTEM);
  if (system !== undefined) {
    if (!isIdentifierSystem(system)) throw invalid('PLATFORM_IDENTIFIER_SYSTEM', 'expected an absolute URI such as urn:oid:… or https://…');
    return system;
  }
  if (any) return null;
  const dir = env.HOSPITAL_API_DIR?.trim();
  throw new HospitalApiError('ERR_API_IDENTIFIER_SYSTEM_MISSING', {
    fix: dir
      ? `hospital-api install --dir ${dir} --identifier-system <the platform's identifier system URI>`
      : `set PLATFORM_IDENTIFIER_SYSTEM=<the platform's identifier system URI> in ${envFile}, or run an install with \`hospital-api install --identifier-system <URI>\``,
  });
}

/** Builds the configuration from flags, the environment and the .env file. @throws ERR_CONFIG_MISSING, ERR_CONFIG_INVALID */
export function loadConfig(flags: ConfigFlags = {}, processEnv: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): ApiConfig {
  const envFile = resolve(cwd, flags.envFile ?? '.env');
  const env: Env = mergedEnv(envFile, processEnv);
  const portText = flags.port !== undefined ? String(flags.port) : text(env, 'PORT');
  const port = portText === undefined ? 9000 : Number(portText);
  if (!/^\d+$/.test(String(portText ?? '9000')) || port > 65535) throw invalid('PORT', `"${portText}" is not a port`);
  const host = flags.host ?? text(env, 'HOST') ?? '0.0.0.0';
  if (isIP(host) === 0 && host !== 'localhost') throw invalid('HOST', `"${host}" is not an IP address`);

  const method = (text(env, 'PLATFORM_VALIDATE_METHOD') ?? 'GET').toUpperCase();
  if (method !== 'GET' && method !== 'POST') throw invalid('PLATFORM_VALIDATE_METHOD', 'must be GET or POST');

  const metrics = text(env, 'METRICS_LISTEN') ?? '127.0.0.1:9464';
  const logLevel = (text(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) throw invalid('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);

  const fhirApiKey = required(env, 'FHIR_API_KEY');
  // The key goes into an HTTP header: refuse what a header cannot carry.
  if (!/^[\x21-\x7e]+$/.test(fhirApiKey)) throw invalid('FHIR_API_KEY', 'must be printable ASCII without spaces');
  const { list, entries } = callers(env);

  const headersTimeoutMs = int(env, 'HEADERS_TIMEOUT_MS', 10_000, 100, 600_000);
  const requestTimeoutMs = int(env, 'REQUEST_TIMEOUT_MS', 30_000, 100, 600_000);
  if (headersTimeoutMs > requestTimeoutMs) throw invalid('HEADERS_TIMEOUT_MS', `must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  const idleTimeoutMs = int(env, 'IDLE_TIMEOUT_MS', 120_000, 100, 3_600_000);
  // A queued request's connection is silent while it waits: the idle cut must not come first.
  const queueTimeoutMs = int(env, 'API_QUEUE_TIMEOUT_MS', 10_000, 100, 600_000);
  if (queueTimeoutMs >= idleTimeoutMs) throw invalid('API_QUEUE_TIMEOUT_MS', `must be below IDLE_TIMEOUT_MS (${idleTimeoutMs})`);

  return Object.freeze({
    host,
    port,
    platformApiUrl: url(env, 'PLATFORM_API_URL', ['http:', 'https:']),
    platformValidateMethod: method,
    platformCa: pemFile(env, 'PLATFORM_CA_FILE', cwd),
    platformTimeoutMs: int(env, 'PLATFORM_TIMEOUT_MS', 5000, 100, 120_000),
    // The key travels to the gateway: HTTPS only, verified against FHIR_CA_FILE or the system store.
    fhirBaseUrl: url(env, 'FHIR_BASE_URL', ['https:']),
    fhirApiKey,
    fhirCa: pemFile(env, 'FHIR_CA_FILE', cwd),
    fhirTimeoutMs: int(env, 'FHIR_TIMEOUT_MS', 30_000, 100, 600_000),
    fhirPageSize: int(env, 'FHIR_PAGE_SIZE', 1000, 1, 5_000),
    identifierSystem: identifierSystem(env, flags, envFile),
    allowedCallers: list,
    allowedCallersText: entries,
    trustProxy: trustProxy(env),
    auditLog: resolve(cwd, text(env, 'AUDIT_LOG') ?? 'hospital-api-audit.log'),
    auditSeal: auditSeal(env, cwd),
    maxPages: int(env, 'MAX_PAGES', 1000, 1, 1_000_000),
    maxResources: int(env, 'MAX_RESOURCES', 200_000, 1, 100_000_000),
    metricsListen: metrics === 'off' ? null : parseListen(metrics, 'METRICS_LISTEN'),
    metricsToken: tokenFile(env, 'METRICS_TOKEN_FILE', cwd),
    logLevel,
    // Under the native supervisor's 8 s stop grace and docker's 10 s, so we exit before a SIGKILL.
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 5000, 0, 600_000),
    bodyLimit: 64 * 1024,
    maxConcurrentRequests: int(env, 'MAX_CONCURRENT_REQUESTS', 16, 1, 10_000),
    queueLength: int(env, 'API_QUEUE_LENGTH', 64, 0, 100_000),
    queueTimeoutMs,
    fhirMaxPageBytes: int(env, 'FHIR_MAX_PAGE_BYTES', 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    sendTimeoutMs: int(env, 'SEND_TIMEOUT_MS', 30_000, 100, 600_000),
    headersTimeoutMs,
    requestTimeoutMs,
    idleTimeoutMs,
    keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
    maxConnections: int(env, 'MAX_CONNECTIONS', 1024, 1, 1_000_000),
  });
}

/**
 * The acceptance record (issue 5 §5; format in reports/README.md): what the
 * gateway presented, what runs, each check's status and result, when, where
 * and with which toolkit. It never holds a key, token or password.
 */
import { hostname } from 'node:os';
import { VERSION } from '../../version.js';
import { endpoints, type InstallConfig } from '../../install-dir/install-config.js';
import type { ComponentVersion } from '../../runtime/types.js';
import type { CertificateInfo } from '../../tls/inspect.js';
import type { CheckResult, GatewayRouteFinding, UndeclaredObject } from '../types.js';

export const RECORD_FORMAT = 'hospital-api/acceptance-record@1';

export interface AcceptanceRecord {
  format: typeof RECORD_FORMAT;
  result: 'accepted' | 'rejected';
  testedAt: string;
  host: string;
  toolkitVersion: string;
  runtime: InstallConfig['runtime'];
  demo: boolean;
  installDir: string;
  gateway: { url: string; certificate: CertificateInfo | null };
  ca: { path: string; certificate: CertificateInfo };
  versions: ComponentVersion[];
  checks: Array<Omit<CheckResult, 'hint' | 'findings'> & { hint?: string }>;
  summary: Record<CheckResult['status'], number>;
  /**
   * Issue 23. SHA-256 (hex) of the gateway's effective configuration as
   * canonical JSON, without ids, created_at/updated_at and secrets (see
   * src/checks/gateway-snapshot.ts); null when the admin API did not answer.
   */
  gatewayConfigSha256: string | null;
  /** Every route that reaches the FHIR server, and what it answered without credentials. */
  gatewayRoutes: GatewayRouteFinding[];
  /** The gateway objects install did not make. */
  gatewayUndeclared: UndeclaredObject[];
  /**
   * Issue 46: the SHA-256 (hex) of the record written before this one in the same folder, null for
   * the first: signed with the rest, so the records form a chain (chain.ts).
   */
  previousRecordSha256: string | null;
}

export interface RecordInput {
  config: InstallConfig;
  installDir: string;
  testedAt: Date;
  accepted: boolean;
  gatewayCertificate: CertificateInfo | null;
  ca: { path: string; certificate: CertificateInfo };
  versions: ComponentVersion[];
  checks: CheckResult[];
  gateway?: { configSha256?: string; routes?: GatewayRouteFinding[]; undeclared?: UndeclaredObject[] };
  /** Set when the record is written (write.ts), under the folder's lock. */
  previousRecordSha256?: string | null;
}

export function buildRecord(input: RecordInput): AcceptanceRecord {
  const summary = { pass: 0, warn: 0, fail: 0, skip: 0, error: 0 };
  for (const c of input.checks) summary[c.status]++;
  return {
    format: RECORD_FORMAT,
    result: input.accepted ? 'accepted' : 'rejected',
    testedAt: input.testedAt.toISOString(),
    host: hostname(),
    toolkitVersion: VERSION,
    runtime: input.config.runtime,
    demo: input.config.demo,
    installDir: input.installDir,
    gateway: { url: endpoints(input.config).gatewayHttps, certificate: input.gatewayCertificate },
    ca: input.ca,
    versions: input.versions,
    // the findings have fields of their own below
    checks: input.checks.map(({ findings: _findings, ...c }) => c),
    summary,
    gatewayConfigSha256: input.gateway?.configSha256 ?? null,
    gatewayRoutes: input.gateway?.routes ?? [],
    gatewayUndeclared: input.gateway?.undeclared ?? [],
    previousRecordSha256: input.previousRecordSha256 ?? null,
  };
}

/**
 * The record's bytes, exactly as signed. Any secret passed in is replaced
 * (defence in depth: no check puts one in, and a test proves it).
 */
export function serializeRecord(record: AcceptanceRecord, secrets: Array<string | null | undefined> = []): string {
  let text = JSON.stringify(record, null, 2) + '\n';
  for (const s of secrets) if (s && s.length >= 8) text = text.split(s).join('[redacted]');
  return text;
}

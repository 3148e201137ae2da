/**
 * `hospital-api verify`: runs the acceptance checks against an installation
 * and writes the signed record (issue 5). The CA is the install's unless
 * --ca names another; a CA that does not fit makes check 4 fail, it is not a
 * usage error. There is deliberately no way to turn certificate checks off.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Agent } from 'undici';
import { HospitalApiError } from '../errors/index.js';
import { readInstallConfig } from '../install-dir/install-config.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { runtimeFor, siteEndpoints } from '../runtime/index.js';
import type { ComponentVersion, Runtime } from '../runtime/types.js';
import { describeCertificate, parsePemBundle } from '../tls/inspect.js';
import { readEnvFile } from '../util/env-file.js';
import { CHECKS } from './list.js';
import { allMandatoryPass, runChecks } from './runner.js';
import { createRunFacts } from './facts.js';
import type { CheckContext, CheckFindings, CheckResult } from './types.js';
import { buildRecord, type AcceptanceRecord } from './record/build.js';
import { writeSignedRecord, type WrittenRecord } from './record/write.js';
import { newestRecord, writeReason, type WriteReason } from './record/schedule.js';

export interface VerifyResult {
  ok: boolean;
  record: AcceptanceRecord;
  files: WrittenRecord;
}

export interface VerifyOptions {
  dir?: string;
  ca?: string;
  runtime?: Runtime;
  onResult?: (r: CheckResult) => void;
  log?: (text: string) => void;
}

function readCa(path: string): { pem: string; cert: X509Certificate } {
  let pem: string;
  try {
    pem = readFileSync(path, 'utf8');
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as NodeJS.ErrnoException).code ?? String(err) }, { cause: err });
  }
  return { pem, cert: parsePemBundle(pem, path)[0] as X509Certificate };
}

/** Every check run and the record built, not yet written. */
async function evaluate(options: VerifyOptions): Promise<{ ok: boolean; record: AcceptanceRecord; dir: string; apiKey: string | null }> {
  // the install's paths and install.json, each read once for the whole run
  const paths = installPaths(options.dir ?? defaultInstallDir());
  const dir = paths.root;
  const config = readInstallConfig(dir);
  const caPath = resolve(options.ca ?? paths.caCert);
  const ca = readCa(caPath);
  const runtime = options.runtime ?? (await runtimeFor(dir, config));
  const apiKey = readEnvFile(paths.apiEnv).FHIR_API_KEY || null;
  // undici verifies the chain and the host name against exactly this CA;
  // explicit, so no environment variable can switch verification off.
  const https = new Agent({ connect: { ca: ca.pem, rejectUnauthorized: true } });
  const ctx: CheckContext = { dir, paths, config, runtime, urls: siteEndpoints(config), caPem: ca.pem, caPath, apiKey, https, facts: createRunFacts({ config, caPem: ca.pem, runtime }) };
  const testedAt = new Date();
  let checks: CheckResult[];
  try {
    checks = await runChecks(CHECKS, ctx, options.onResult);
  } finally {
    await https.close();
  }
  let versions: ComponentVersion[] = [];
  try {
    versions = await runtime.versions();
  } catch (err) {
    options.log?.(`versions unavailable: ${(err as Error).message}`);
  }
  const ok = allMandatoryPass(checks);
  // each check's findings, in check order; no two checks find the same thing
  const found: CheckFindings = Object.assign({}, ...checks.map((c) => c.findings ?? {}));
  const record = buildRecord({
    config,
    installDir: dir,
    testedAt,
    accepted: ok,
    gatewayCertificate: found.gatewayCertificate ?? null,
    ca: { path: caPath, certificate: describeCertificate(ca.cert) },
    versions,
    checks,
    gateway: {
      ...(found.gatewayConfigSha256 ? { configSha256: found.gatewayConfigSha256 } : {}),
      ...(found.gatewayRoutes ? { routes: found.gatewayRoutes } : {}),
      ...(found.gatewayUndeclared ? { undeclared: found.gatewayUndeclared } : {}),
    },
  });
  return { ok, record, dir, apiKey };
}

export async function runVerify(options: VerifyOptions): Promise<VerifyResult> {
  const { ok, record, dir, apiKey } = await evaluate(options);
  const files = writeSignedRecord(dir, record, [apiKey]);
  return { ok, record: files.record, files };
}

export interface ScheduledVerifyResult {
  ok: boolean;
  record: AcceptanceRecord;
  /** The record written, or null when the newest record already said the same (reason null). */
  files: WrittenRecord | null;
  reason: WriteReason;
  /** The newest record before this run, when there was one. */
  previous: string | null;
}

/**
 * `verify --scheduled` (issue 46): every check, as verify; a signed record only when the result or
 * the gateway's configuration changed since the newest record, or that record is a day old
 * (schedule.ts). Two runs at once may both write the same change (two records, both chained);
 * neither can skip one.
 */
export async function runScheduledVerify(options: VerifyOptions): Promise<ScheduledVerifyResult> {
  const { ok, record, dir, apiKey } = await evaluate(options);
  const reports = installPaths(dir).reports;
  const newest = newestRecord(reports);
  const reason = writeReason(newest?.record ?? null, record);
  if (reason === null) return { ok, record, files: null, reason, previous: newest?.file ?? null };
  const files = writeSignedRecord(dir, record, [apiKey]);
  return { ok, record: files.record, files, reason, previous: newest?.file ?? null };
}

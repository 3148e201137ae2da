/**
 * Acceptance checks (spec §4.5, issue 5), shaped like npm's lib/commands/doctor.js
 * table and flutter_tools' doctor_validator.dart results:
 * a declarative check with `run(ctx)`; expected failures are returned, and the
 * runner turns a throw or a time-out into `error`.
 */
import type { Dispatcher } from 'undici';
import type { endpoints, InstallConfig } from '../install-dir/install-config.js';
import type { Runtime } from '../runtime/types.js';
import type { CertificateInfo } from '../tls/inspect.js';

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip' | 'error';

export interface CheckOutcome {
  status: CheckStatus;
  summary: string;
  detail: string;
  /** The HTTP status the check saw, when it made one decisive request. */
  httpStatus?: number;
  /** What to do about a failure. */
  hint?: string;
}

export interface CheckResult extends CheckOutcome {
  id: string;
  /** The spec §4.5 item (1-5) or `extra` for the negative checks of issue 5. */
  spec: string;
  title: string;
  mandatory: boolean;
  durationMs: number;
}

export interface CheckContext {
  dir: string;
  config: InstallConfig;
  runtime: Runtime;
  urls: ReturnType<typeof endpoints>;
  /** The CA the gateway is verified against (--ca, else the install's). */
  caPem: string;
  caPath: string;
  /** FHIR_API_KEY from hospital-api.env; never printed or recorded. */
  apiKey: string | null;
  /** undici dispatcher that trusts exactly `caPem` (verification always on). */
  https: Dispatcher;
  /** Filled by the certificate check, read by the expiry check and the record. */
  shared: { gatewayCertificate?: CertificateInfo };
}

export interface Check {
  id: string;
  spec: string;
  title: string;
  /** Non-mandatory checks may warn without failing verify. */
  mandatory: boolean;
  timeoutMs?: number;
  run(ctx: CheckContext): Promise<CheckOutcome>;
}

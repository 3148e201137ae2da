/**
 * Acceptance checks (spec §4.5, issue 5), shaped like npm's lib/commands/doctor.js
 * table and flutter_tools' doctor_validator.dart results:
 * a declarative check with `run(ctx)`; expected failures are returned, and the
 * runner turns a throw or a time-out into `error`.
 */
import type { Dispatcher } from 'undici';
import type { endpoints, InstallConfig } from '../install-dir/install-config.js';
import type { InstallPaths } from '../install-dir/layout.js';
import type { Runtime } from '../runtime/types.js';
import type { CertificateInfo } from '../tls/inspect.js';
import type { RunFacts } from './facts.js';

/** A route whose traffic reaches the FHIR server, and what it answered without credentials (issue 23). */
export interface GatewayRouteFinding {
  route: string;
  service: string;
  /** The FHIR server's host:port it reaches (directly or through an upstream target). */
  via: string;
  protocols: string[];
  /** The credential plugin that runs per scheme (`https: key-auth (service fhir-api-key-auth)`), or none. */
  guards: string[];
  /** e.g. `GET https://…/open/metadata → 200 CapabilityStatement`. */
  answers: string[];
  open: boolean;
  problems: string[];
}

/** An object on the gateway that install did not declare (issue 23). */
export interface UndeclaredObject {
  kind: 'service' | 'route' | 'upstream' | 'target' | 'plugin' | 'consumer';
  name: string;
  detail: string;
}

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip' | 'error';

/** What a check found besides its outcome, typed: the run hands them to the record (issue 44). */
export interface CheckFindings {
  /** certificate-chain: the certificate the gateway presented, verified. */
  gatewayCertificate?: CertificateInfo;
  /** fhir-routes-closed: every route that reaches the FHIR server, or answered FHIR data. */
  gatewayRoutes?: GatewayRouteFinding[];
  /** gateway-undeclared: the objects install did not make, and the configuration's digest. */
  gatewayUndeclared?: UndeclaredObject[];
  gatewayConfigSha256?: string;
}

export interface CheckOutcome {
  status: CheckStatus;
  summary: string;
  detail: string;
  /** The HTTP status the check saw, when it made one decisive request. */
  httpStatus?: number;
  /** What to do about a failure. */
  hint?: string;
  /** For the record, not for the table. */
  findings?: CheckFindings;
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
  /** The install directory's files (computed once per run). */
  paths: InstallPaths;
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
  /** What the run reads once, on the first check that asks, for every check that asks (facts.ts). Checks write nothing here. */
  facts: RunFacts;
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

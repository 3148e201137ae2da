/**
 * Acceptance (spec §4.5; issues 5, 11, 23, 43), in one place with one entry: the design card's
 * src/checks/ holds the run, the checks and the signed record, and this file is the only one the
 * rest of the toolkit imports (test/contracts/import-rules.test.ts).
 *
 * - run.ts: one `verify` run: the context read once, the checks in order (list.ts, runner.ts),
 *   the record built from their outcomes and findings, signed and written.
 * - one file per check (list.ts names them in order), the gateway snapshot they share
 *   (gateway-snapshot.ts) and the route analysis (fhir-reach.ts); render.ts prints results.
 * - record/: build, Markdown, CMS signature (tls/cms-sign.ts) and its verification (tls/cms-verify.ts),
 *   writing, reading a record file back (verify-file.ts: `record verify`), diff (`record diff`, its files read back by read-record.ts).
 */
export { runScheduledVerify, runVerify, type ScheduledVerifyResult, type VerifyOptions, type VerifyResult } from './run.js';
export { formatCheckProgress, renderChecks } from './render.js';
export type { CheckResult } from './types.js';
export { signerUsageProblem } from '../tls/cms-verify.js';
export { verifyRecordChain, verifyRecordFile } from './record/verify-file.js';
export { diffRecords } from './record/diff.js';
export { readRecord } from './record/read-record.js';

import type { Command } from 'commander';
import { existsSync, readFileSync } from 'node:fs';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { readInstallConfig } from '../install-dir/install-config.js';
import { hasAuditSeal } from '../install-dir/audit-seal-files.js';
import { HospitalApiError } from '../errors/index.js';
import { renderTable } from '../output/table.js';
import type { AuditChainReport } from '../api/audit/audit-check.js';

interface AuditFlags extends GlobalOptions {
  dir?: string;
  ca?: string;
  only?: boolean;
}

interface DisclosureFlags extends AuditFlags {
  patient: string;
  since?: string;
  until?: string;
  csv?: boolean;
}

/** The log to read: `file`, or the install's (its runtime says where). */
async function logFile(file: string | undefined, options: AuditFlags): Promise<string> {
  if (file !== undefined) return file;
  const dir = options.dir ?? defaultInstallDir();
  const config = readInstallConfig(dir);
  const { profileOf } = await import('../runtime/profiles.js');
  const profile = profileOf(config.runtime);
  const here = profile.auditLogFile(installPaths(dir), config);
  if (here === null) {
    throw new HospitalApiError('ERR_USAGE', { detail: (await profile.auditLogElsewhere?.(dir)) ?? 'this runtime keeps no audit log on this host: give the file' });
  }
  return here;
}

/** The CA the seals must chain to: --ca, else the install's (--dir, or the default install when no file is named). */
function caPem(file: string | undefined, options: AuditFlags): { pem: string; path: string } | null {
  const path = options.ca ?? (options.dir !== undefined || file === undefined ? installPaths(options.dir ?? defaultInstallDir()).caCert : null);
  if (path === null) return null;
  if (options.ca === undefined && !existsSync(path)) return null;
  try {
    return { pem: readFileSync(path, 'utf8'), path };
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path, detail: (err as NodeJS.ErrnoException).code ?? 'read failed' }, { cause: err });
  }
}

/** The log and its rotated files, checked as one chain. */
async function verified(file: string | undefined, options: AuditFlags): Promise<{ log: string; report: AuditChainReport; ca: string | null; sealKeyConfigured: boolean }> {
  const { auditLogFiles, checkAuditChain } = await import('../api/audit/audit-check.js');
  const log = await logFile(file, options);
  const ca = caPem(file, options);
  const files = options.only ? [log] : auditLogFiles(log);
  // The install's own log: without its audit-seal pair (a hospital CA, no --ca-key) its API writes no seals (issue 46).
  const install = options.ca === undefined && (options.dir !== undefined || file === undefined) ? installPaths(options.dir ?? defaultInstallDir()) : null;
  const sealKeyConfigured = install === null || !existsSync(install.caCert) || hasAuditSeal(install);
  return { log, report: await checkAuditChain(files, { caPem: ca?.pem ?? null, sealKeyConfigured, ...(options.only ? { state: null } : {}) }), ca: ca?.path ?? null, sealKeyConfigured };
}

function instant(name: string, value: string | undefined): number | null {
  if (value === undefined) return null;
  const at = Date.parse(value);
  if (Number.isNaN(at)) throw new HospitalApiError('ERR_USAGE', { detail: `${name} "${value}" is not a date (ISO 8601, e.g. 2026-01-31 or 2026-01-31T12:00:00Z)` });
  return at;
}

/** One CSV field (RFC 4180), never read as a formula by a spreadsheet. */
function csvField(value: string | number | null): string {
  let text = value === null ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * `hospital-api audit verify [file]`: reads the audit log (the install's, or
 * `file`) with its rotated files, and proves every line is a whole audit line,
 * linked to the line before it and covered by a seal of the install's CA (issue
 * 46); exit 1 naming the line number of each that is not. Never prints a line's
 * content (it names patients). `audit disclosures`: who received a patient's
 * data, from a log that passes verify only.
 */
export function register(program: Command): void {
  const audit = program.command('audit').description(SUMMARIES.audit);
  audit
    .command('verify [file]')
    .description("check the audit log (default: the install's) and its rotated files: whole JSON lines, each linked to the one before, sealed by the install's CA")
    .option('--dir <dir>', 'install directory whose audit log and CA to use (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--ca <file>', "CA certificate the seals must chain to (default: the install's tls/ca.pem)")
    .option('--only', 'check the file alone, not its rotated files and chain state')
    .action(
      action<AuditFlags>('audit verify', async (options, io, args) => {
        const { report, sealKeyConfigured } = await verified(args[0] as string | undefined, options);
        const problems = report.files.flatMap((f) => f.brokenLines.map((b) => ({ file: f.file, ...b })));
        if (io.json) {
          // `result` is the named log's report as before issue 46; `files` every file of the chain, oldest first.
          const named = report.files[report.files.length - 1]!;
          io.out(JSON.stringify({ ok: report.ok, command: 'audit verify', result: { ...named, ok: report.ok, sealsChecked: report.sealsChecked, sealKeyConfigured, unsealedNoKey: report.unsealedNoKey, files: report.files } }));
          return report.ok ? 0 : 1;
        }
        io.out(
          renderTable(
            ['audit log', 'lines', 'started', 'end', 'probe', 'seals', 'legacy', 'broken'],
            report.files.map((f) => [f.file, ...[f.lines, f.phases.started, f.phases.end, f.phases.probe, f.phases.seal, f.legacy, f.broken].map(String)]),
          ),
        );
        if (problems.length > 0) {
          const several = report.files.length > 1;
          io.out(renderTable(several ? ['line', 'problem', 'audit log'] : ['line', 'problem'], problems.map((b) => (several ? [String(b.line), b.reason, b.file] : [String(b.line), b.reason]))));
          for (const f of report.files) if (f.broken > f.brokenLines.length) io.out(`… and ${f.broken - f.brokenLines.length} more broken line(s) in ${f.file}`);
        }
        const legacy = report.files.reduce((n, f) => n + f.legacy, 0);
        if (legacy > 0) io.out(`NOTE: ${legacy} unchained legacy line(s), written before the chain (issue 46): whole, but not tamper-evident`);
        const broken = report.files.reduce((n, f) => n + f.broken, 0);
        const names = report.files.map((f) => f.file).join(', ');
        if (!report.sealsChecked && report.files.some((f) => f.lines > f.legacy)) io.out('NOT CHECKED: no CA to check the seals against: give --dir or --ca');
        if (report.unsealedNoKey > 0) {
          io.out(`NOT SEALED: no seal key configured (the install has no tls/audit-seal.pem): the newest ${report.unsealedNoKey} line(s) are chained but no seal covers them, so lines removed from the end cannot be told; rerun install with --ca-key once, or --audit-seal-cert/--audit-seal-key`);
        }
        io.out(report.ok ? `OK: every line of ${names} is whole${legacy < report.files.reduce((n, f) => n + f.lines, 0) ? (report.unsealedNoKey > 0 ? ' and chained (not sealed: no seal key configured)' : ', chained and sealed') : ''}` : `BROKEN: ${broken} line(s) of ${names} are not whole, chained and sealed audit lines`);
        return report.ok ? 0 : 1;
      }),
    );
  audit
    .command('disclosures [file]')
    .description("every time a patient's data went out (time, caller, request id, decision, resources, bytes), from an audit log that passes audit verify")
    .requiredOption('--patient <id>', "the patient's platform care id or FHIR id")
    .option('--since <date>', 'from this time on (ISO 8601)')
    .option('--until <date>', 'up to this time (ISO 8601)')
    .option('--csv', 'CSV instead of a table')
    .option('--dir <dir>', 'install directory whose audit log and CA to use (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--ca <file>', "CA certificate the seals must chain to (default: the install's tls/ca.pem)")
    .action(
      action<DisclosureFlags>('audit disclosures', async (options, io, args) => {
        const since = instant('--since', options.since);
        const until = instant('--until', options.until);
        const { log, report } = await verified(args[0] as string | undefined, options);
        if (!report.ok) {
          const broken = report.files.reduce((n, f) => n + f.broken, 0);
          throw new HospitalApiError('ERR_API_AUDIT_UNVERIFIED', { path: log, detail: report.sealsChecked ? `${broken} problem(s)` : 'no CA to check its seals against' });
        }
        const { readDisclosures } = await import('../api/audit/disclosures.js');
        const rows = await readDisclosures(report.files.map((f) => f.file), options.patient, { since, until });
        if (io.json) {
          io.out(JSON.stringify({ ok: true, command: 'audit disclosures', result: { patient: options.patient, files: report.files.map((f) => f.file), disclosures: rows } }));
        } else if (options.csv) {
          const head = ['time', 'caller', 'requestId', 'decision', 'resources', 'bytes', 'platformCareId', 'fhirPatientId', 'file', 'line'] as const;
          io.out([head.join(','), ...rows.map((r) => head.map((h) => csvField(r[h])).join(','))].join('\n'));
        } else {
          io.out(renderTable(['time', 'caller', 'request id', 'decision', 'resources', 'bytes'], rows.map((r) => [r.time, r.caller, r.requestId, r.decision, String(r.resources ?? ''), String(r.bytes ?? '')])));
          io.out(`${rows.length} disclosure(s) of patient ${options.patient} in ${report.files.length} verified file(s)`);
        }
        return 0;
      }),
    );
}

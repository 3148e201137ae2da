import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';
import { defaultInstallDir, installPaths } from '../install-dir/layout.js';
import { readInstallConfig } from '../install-dir/install-config.js';
import { HospitalApiError } from '../errors/index.js';
import { renderTable } from '../output/table.js';

interface AuditFlags extends GlobalOptions {
  dir?: string;
}

/**
 * `hospital-api audit verify [file]`: reads the audit log (the install's, or
 * `file`) and proves every line is a whole audit line; exit 1 naming the line
 * number of each that is not. Never prints a line's content (it names patients).
 */
export function register(program: Command): void {
  const audit = program.command('audit').description(SUMMARIES.audit);
  audit
    .command('verify [file]')
    .description("check that every line of the audit log is a whole JSON audit line (default: the install's log)")
    .option('--dir <dir>', 'install directory whose audit log to read (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .action(
      action<AuditFlags>('audit verify', async (options, io, args) => {
        const { checkAuditFile } = await import('../api/audit/audit-check.js');
        let file = args[0] as string | undefined;
        if (file === undefined) {
          const dir = options.dir ?? defaultInstallDir();
          const config = readInstallConfig(dir);
          const { profileOf } = await import('../runtime/profiles.js');
          const profile = profileOf(config.runtime);
          const here = profile.auditLogFile(installPaths(dir), config);
          if (here === null) {
            throw new HospitalApiError('ERR_USAGE', { detail: (await profile.auditLogElsewhere?.(dir)) ?? 'this runtime keeps no audit log on this host: give the file' });
          }
          file = here;
        }
        const report = await checkAuditFile(file);
        if (io.json) {
          io.out(JSON.stringify({ ok: report.ok, command: 'audit verify', result: report }));
        } else {
          io.out(
            renderTable(
              ['audit log', 'lines', 'started', 'end', 'probe', 'broken'],
              [[report.file, String(report.lines), String(report.phases.started), String(report.phases.end), String(report.phases.probe), String(report.broken)]],
            ),
          );
          if (!report.ok) {
            io.out(renderTable(['line', 'problem'], report.brokenLines.map((b) => [String(b.line), b.reason])));
            if (report.broken > report.brokenLines.length) io.out(`… and ${report.broken - report.brokenLines.length} more broken line(s)`);
          }
          io.out(report.ok ? `OK: every line of ${report.file} is a whole audit line` : `BROKEN: ${report.broken} line(s) of ${report.file} are not whole audit lines`);
        }
        return report.ok ? 0 : 1;
      }),
    );
}

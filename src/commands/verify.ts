import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';

interface VerifyFlags extends GlobalOptions {
  dir?: string;
  ca?: string;
  scheduled?: boolean;
}

/** `hospital-api verify`: run the acceptance checks and write a signed test record (spec §4.5, issue 5) */
export function register(program: Command): void {
  program
    .command('verify')
    .description(SUMMARIES.verify)
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--ca <file>', 'CA certificate to verify the gateway against (default: the install directory\'s)')
    .option('--scheduled', 'as run by `install --verify-every`: write a record only when the result or the gateway configuration changed, or the newest record is a day old')
    .action(
      action<VerifyFlags>('verify', async (options, io) => {
        const { formatCheckProgress, renderChecks, runScheduledVerify, runVerify } = await import('../checks/index.js');
        if (options.scheduled) {
          const run = await runScheduledVerify({
            ...(options.dir ? { dir: options.dir } : {}),
            ...(options.ca ? { ca: options.ca } : {}),
            onResult: (r) => io.log(formatCheckProgress(r)),
            log: (t) => io.warn(t),
          });
          const verdict = run.ok ? 'ACCEPTED' : 'REJECTED';
          if (io.json) {
            io.out(JSON.stringify({ ok: run.ok, command: 'verify', result: { record: run.record, recordPath: run.files?.json ?? null, signaturePath: run.files?.signature ?? null, written: run.reason, previousRecordPath: run.previous } }));
          } else {
            io.out(renderChecks(run.record.checks, io.colour));
            io.out(run.files ? `${verdict}: record ${run.files.json} (${run.reason}; signed: ${run.files.signature})` : `${verdict}: unchanged since ${run.previous} (no new record)`);
          }
          return run.ok ? 0 : 1;
        }
        const result = await runVerify({
          ...(options.dir ? { dir: options.dir } : {}),
          ...(options.ca ? { ca: options.ca } : {}),
          onResult: (r) => io.log(formatCheckProgress(r)),
          log: (t) => io.warn(t),
        });
        if (io.json) {
          io.out(JSON.stringify({ ok: result.ok, command: 'verify', result: { record: result.record, recordPath: result.files.json, signaturePath: result.files.signature, markdownPath: result.files.markdown } }));
        } else {
          io.out(renderChecks(result.record.checks, io.colour));
          io.out(`${result.ok ? 'ACCEPTED' : 'REJECTED'}: record ${result.files.json} (signed: ${result.files.signature})`);
        }
        return result.ok ? 0 : 1;
      }),
    );
}

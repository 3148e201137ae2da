import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';

interface VerifyFlags extends GlobalOptions {
  dir?: string;
  ca?: string;
}

/** `hospital-api verify`: run the acceptance checks and write a signed test record (spec §4.5, issue 5) */
export function register(program: Command): void {
  program
    .command('verify')
    .description(SUMMARIES.verify)
    .option('--dir <dir>', 'install directory (default: $HOSPITAL_API_DIR or ./.hospital-api)')
    .option('--ca <file>', 'CA certificate to verify the gateway against (default: the install directory\'s)')
    .action(
      action<VerifyFlags>('verify', async (options, io) => {
        const { formatCheckProgress, renderChecks, runVerify } = await import('../checks/index.js');
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

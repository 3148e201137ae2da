import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { SUMMARIES } from './summaries.js';

interface RecordFlags extends GlobalOptions {
  ca?: string;
  dir?: string;
}

/** `hospital-api record verify`: check a test record's detached signature and its chain to the CA (issue 5) */
export function register(program: Command): void {
  const record = program.command('record').description(SUMMARIES.record);
  record
    .command('verify <record>')
    .description('verify <record>.p7s over <record> and the signer certificate against the CA')
    .option('--ca <file>', 'CA certificate (default: tls/ca.pem of --dir, or of the install the record lies in)')
    .option('--dir <dir>', 'install directory whose CA to use')
    .action(
      action<RecordFlags>('record verify', async (options, io, args) => {
        const { verifyRecordFile } = await import('../record/check-file.js');
        const result = verifyRecordFile(args[0] as string, options);
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'record verify', result }));
        else io.out(`OK: ${result.record} signed by ${result.signer.subject} at ${result.signingTime ?? 'unknown time'} (CA ${result.ca})`);
      }),
    );
}

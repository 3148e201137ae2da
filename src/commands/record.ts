import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { renderTable } from '../output/table.js';
import { SUMMARIES } from './summaries.js';

interface RecordFlags extends GlobalOptions {
  ca?: string;
  dir?: string;
}

/**
 * `hospital-api record verify`: check a test record's detached signature and its chain to the CA (issue 5);
 * `hospital-api record diff A B`: what changed between two records (issue 23). Exit 0: the same; 1: they differ.
 */
export function register(program: Command): void {
  const record = program.command('record').description(SUMMARIES.record);
  record
    .command('verify <record>')
    .description('verify <record>.p7s over <record> and the signer certificate against the CA')
    .option('--ca <file>', 'CA certificate (default: tls/ca.pem of --dir, or of the install the record lies in)')
    .option('--dir <dir>', 'install directory whose CA to use')
    .action(
      action<RecordFlags>('record verify', async (options, io, args) => {
        const { verifyRecordFile } = await import('../checks/index.js');
        const result = verifyRecordFile(args[0] as string, options);
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'record verify', result }));
        else io.out(`OK: ${result.record} signed by ${result.signer.subject} at ${result.signingTime ?? 'unknown time'} (CA ${result.ca})`);
      }),
    );
  record
    .command('diff <a> <b>')
    .description('what changed between two records: result, gateway configuration hash, checks, routes to the FHIR server, objects install did not make, versions (exit 0 same, 1 different)')
    .action(
      action<GlobalOptions>('record diff', async (_options, io, args) => {
        const { diffRecords, readRecord } = await import('../checks/index.js');
        const [a, b] = [args[0] as string, args[1] as string];
        const diff = diffRecords(readRecord(a), readRecord(b), { a, b });
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'record diff', result: diff }));
        else if (diff.same) io.out(`no differences between ${a} and ${b}`);
        else io.out(renderTable(['what', 'A', 'B'], diff.differences.map((d) => [d.what, d.a ?? '(absent)', d.b ?? '(absent)'])));
        return diff.same ? 0 : 1;
      }),
    );
}

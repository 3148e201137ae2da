import type { Command } from 'commander';
import { action, type GlobalOptions } from './action.js';
import { HospitalApiError } from '../errors/index.js';
import { printable } from '../output/printable.js';
import { renderTable } from '../output/table.js';
import { SUMMARIES } from './summaries.js';

interface RecordFlags extends GlobalOptions {
  ca?: string;
  dir?: string;
  chain?: string;
}

/**
 * `hospital-api record verify`: check a test record's detached signature and its chain to the CA (issue 5);
 * `hospital-api record diff A B`: what changed between two records (issue 23). Exit 0: the same; 1: they differ.
 */
export function register(program: Command): void {
  const record = program.command('record').description(SUMMARIES.record);
  record
    .command('verify [record]')
    .description('verify <record>.p7s over <record> and the signer certificate against the CA; with --chain, every record of a folder and the chain they form')
    .option('--ca <file>', 'CA certificate (default: tls/ca.pem of --dir, or of the install the record or folder lies in)')
    .option('--dir <dir>', 'install directory whose CA to use')
    .option('--chain <folder>', 'check every acceptance record in <folder> (an install\'s reports/): each signature, and that each names the one before it')
    .action(
      action<RecordFlags>('record verify', async (options, io, args) => {
        const record = args[0] as string | undefined;
        if ((record === undefined) === (options.chain === undefined)) {
          throw new HospitalApiError('ERR_USAGE', { detail: 'give one record file, or --chain <folder>' });
        }
        const { verifyRecordChain, verifyRecordFile } = await import('../checks/index.js');
        if (options.chain !== undefined) {
          const report = verifyRecordChain(options.chain, options);
          if (!io.json) io.out(renderTable(['record', 'signature', 'link to the one before'], report.records.map((r) => [r.record, r.signature, r.link])));
          if (!report.ok) {
            throw new HospitalApiError('ERR_INSTALL_RECORD_CHAIN_BROKEN', { path: report.folder, detail: report.problems.join('; ') });
          }
          if (io.json) io.out(JSON.stringify({ ok: true, command: 'record verify', result: report }));
          else io.out(`OK: ${report.records.length} records, each signed under ${report.ca}, each naming the one before it`);
          return;
        }
        const result = verifyRecordFile(record!, options);
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
        // A record's text is data: its control characters (escape sequences) are shown, never sent to the terminal.
        if (io.json) io.out(JSON.stringify({ ok: true, command: 'record diff', result: diff }));
        else if (diff.same) io.out(`no differences between ${printable(a)} and ${printable(b)}`);
        else io.out(renderTable(['what', 'A', 'B'], diff.differences.map((d) => [d.what, d.a ?? '(absent)', d.b ?? '(absent)'].map(printable))));
        return diff.same ? 0 : 1;
      }),
    );
}

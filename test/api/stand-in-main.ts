/**
 * The stand-ins as their own process, for the api benchmark (so they do not
 * share an event loop with the client being timed). Usage:
 *   node --import tsx test/api/stand-in-main.ts <dir> <size>...
 * Writes a PKI to <dir>, serves patient `care-<size>` with a record of <size>
 * entries, prints one JSON line {platformUrl, fhirUrl, caFile, apiKey}, and
 * runs until killed.
 */
import { makeTestPki } from '../helpers/pki.js';
import { makeRecord, startFhirStandIn, startPlatform } from './stand-ins.js';

const [dir, ...sizes] = process.argv.slice(2);
if (!dir || sizes.length === 0) {
  process.stderr.write('usage: stand-in-main.ts <dir> <size>...\n');
  process.exit(2);
}
const apiKey = 'bench-fhir-key';
const pki = makeTestPki(dir);
const patients: Record<string, string[]> = {};
const records: Record<string, unknown[]> = {};
for (const size of sizes) {
  patients[`care-${size}`] = [`p${size}`];
  records[`p${size}`] = makeRecord(`p${size}`, Number(size));
}
const platform = await startPlatform(() => ({ status: 200, body: { granted: true } }));
const fhir = await startFhirStandIn({ tls: pki.server, apiKey, patients, records, maxPageSize: 1000 });
process.stdout.write(`${JSON.stringify({ platformUrl: platform.url, fhirUrl: fhir.url, caFile: pki.files.ca, apiKey })}\n`);
const stop = async () => {
  await Promise.all([platform.close(), fhir.close()]);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

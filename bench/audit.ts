/**
 * `npm run bench -- audit`: the audit log's cost per record (issue 46: the
 * chain and its seals must stay within the noise of the writer before them).
 * Each round writes RECORDS `end` lines to a fresh file on the bench's temp
 * disk, as the API does: one awaited write at a time (one sync per line), then
 * CONCURRENT at a time (group commit). Variants, alternated round by round so
 * each sees the same machine: the tree's writer with seals (a certificate of a
 * test CA) and without; and, when BENCH_AUDIT_BASELINE names another
 * openAuditLog module (e.g. an older audit.ts copied beside this one), that
 * writer too, for a same-run ratio.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openAuditLog, type AuditRecord } from '../src/api/audit/audit.js';
import { generateCa, issueCertificate } from '../src/tls/pki.js';
import { percentile, round, type BenchSection } from './report.js';

const RECORDS = Number(process.env.BENCH_AUDIT_RECORDS ?? 400);
const CONCURRENT = 32;
const ROUNDS = Number(process.env.BENCH_AUDIT_ROUNDS ?? 7);

type Open = (path: string, onChange?: () => void, options?: object) => { write(r: AuditRecord): Promise<void>; close(): Promise<void> };

function record(i: number): AuditRecord {
  return {
    time: new Date().toISOString(), phase: 'end', requestId: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, callerRequestId: null,
    caller: '10.0.0.5', platformCareId: `care-${i}`, identifierSystem: 'https://platform.example/care-id', fhirPatientId: `p${i}`,
    decision: 'granted', code: null, pages: 5, resources: 46, bytes: 20543, durationMs: 41.2, status: 200, aborted: false,
  };
}

/** µs per record: sequential (each awaited), then CONCURRENT in flight. */
async function once(open: Open, options: object, dir: string, k: number): Promise<{ sequential: number; grouped: number }> {
  const path = join(dir, `audit-${k}.log`);
  const log = open(path, () => {}, options);
  let t = performance.now();
  for (let i = 0; i < RECORDS; i++) await log.write(record(i));
  const sequential = ((performance.now() - t) * 1000) / RECORDS;
  t = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENT }, async () => {
    while (next < RECORDS) await log.write(record(next++));
  }));
  const grouped = ((performance.now() - t) * 1000) / RECORDS;
  await log.close();
  return { sequential, grouped };
}

export async function run(): Promise<BenchSection> {
  const ca = generateCa({ commonName: 'Bench CA' });
  const signer = issueCertificate(ca, { commonName: 'bench seal signer', usage: 'signing' });
  const variants: Array<{ name: string; open: Open; options: object }> = [
    { name: 'chained, sealed (this tree)', open: openAuditLog as Open, options: { seal: signer } },
    { name: 'chained, no seal key (this tree)', open: openAuditLog as Open, options: {} },
  ];
  const baseline = process.env.BENCH_AUDIT_BASELINE;
  if (baseline) {
    const mod = (await import(pathToFileURL(resolve(baseline)).href)) as { openAuditLog: Open };
    variants.push({ name: `baseline (${baseline})`, open: mod.openAuditLog, options: {} });
  }
  const dir = mkdtempSync(join(tmpdir(), 'bench-audit-'));
  const samples = variants.map(() => ({ sequential: [] as number[], grouped: [] as number[] }));
  try {
    let k = 0;
    for (const [i, v] of variants.entries()) await once(v.open, v.options, dir, k++ + i); // warm-up
    for (let r = 0; r < ROUNDS; r++) {
      // each round starts with another variant: none always follows the same one (a seal's state file sync, the disk's journal)
      for (let j = 0; j < variants.length; j++) {
        const i = (r + j) % variants.length;
        const v = variants[i]!;
        const s = await once(v.open, v.options, dir, k++);
        samples[i]!.sequential.push(s.sequential);
        samples[i]!.grouped.push(s.grouped);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const median = (xs: number[]): number => percentile([...xs].sort((a, b) => a - b), 50);
  const rows = variants.map((v, i) => ({
    writer: v.name,
    'µs/record, one at a time (p50 of rounds)': round(median(samples[i]!.sequential), 1),
    [`µs/record, ${CONCURRENT} in flight (p50 of rounds)`]: round(median(samples[i]!.grouped), 1),
  }));
  const ref = samples.length > 2 ? samples[2]! : samples[1]!;
  const ratio = round(median(samples[0]!.grouped) / median(ref.grouped), 2);
  const ratioSeq = round(median(samples[0]!.sequential) / median(ref.sequential), 2);
  // the writer the seals are weighed against, in the same rounds: another writer (BENCH_AUDIT_BASELINE) or this one unsealed
  const refName = samples.length > 2 ? 'baseline' : 'unsealed';
  const refLabel = samples.length > 2 ? 'the baseline writer (BENCH_AUDIT_BASELINE)' : 'this writer with no seal key';
  return {
    name: 'audit',
    description: `${RECORDS} end lines per round, ${ROUNDS} rounds after a warm-up, variants alternated, each round starting with the next one; a fresh file per round in ${tmpdir()} (fdatasync per batch); seals signed with a test CA's RSA-2048 signing certificate. Ratios: sealed over ${samples.length > 2 ? 'the baseline writer' : 'no seal key'}.`,
    rows,
    targets: [
      {
        name: `sealed / ${refName}, ${CONCURRENT} in flight`, value: ratio, target: '<= 1.10', met: ratio <= 1.1,
        floor: `${refLabel}: ${round(median(ref.grouped), 1)} µs/record`, figure: `chained and sealed: ${round(median(samples[0]!.grouped), 1)} µs/record`,
      },
      {
        name: `sealed / ${refName}, one at a time`, value: ratioSeq, target: '<= 1.10', met: ratioSeq <= 1.1,
        floor: `${refLabel}: ${round(median(ref.sequential), 1)} µs/record`, figure: `chained and sealed: ${round(median(samples[0]!.sequential), 1)} µs/record`,
      },
    ],
  };
}

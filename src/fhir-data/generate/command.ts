/**
 * `hospital-api fhir generate --patients N --seed S [--sizes 10-2000] [--out DIR] [--format bundles|ndjson|both]`
 * Writes (byte-identical for the same options):
 *  - `00-shared.json`      transaction Bundle(s) of the shared Practitioner/Organization/Location/Medication
 *  - `01-patients.ndjson`  one transaction Bundle (≤ 100 entries) per line
 *  - `resources.ndjson`    (ndjson/both) one resource per line, ids kept
 *  - `manifest.json`       patients with their platform care id, Patient id and size
 * Load them in that order with `hospital-api fhir load DIR/00-shared.json DIR/01-patients.ndjson`
 * (the line it prints names `--dir <install dir>` when it was given one: the installation the data is for).
 */
import { createWriteStream, mkdirSync } from 'node:fs';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import type { Io } from '../../output/io.js';
import { writeFileAtomic } from '../../util/atomic-write.js';
import { shellWord } from '../../util/shell-word.js';
import { toNdjsonLines, toTransactionBundles } from './bundles.js';
import { countByType, generateDataset } from './dataset.js';
import { PLATFORM_CARE_ID_SYSTEM } from './model.js';

export interface GenerateOptions {
  patients: number | string;
  seed: string | number;
  sizes?: string;
  out?: string;
  format?: 'bundles' | 'ndjson' | 'both';
  /** The installation the data is for: the printed `fhir load` names it (nothing is written there). */
  dir?: string;
}

async function writeLines(path: string, lines: Iterable<string>): Promise<void> {
  const stream = createWriteStream(path, { encoding: 'utf8' });
  for (const line of lines) {
    if (!stream.write(line + '\n')) await once(stream, 'drain');
  }
  stream.end();
  await once(stream, 'finish');
}

/** @returns exit code. @throws ERR_FHIR_GENERATE_BAD_OPTION, ERR_FILE_WRITE */
export async function runGenerate(options: GenerateOptions, io: Io): Promise<number> {
  const format = options.format ?? 'bundles';
  if (!['bundles', 'ndjson', 'both'].includes(format)) {
    throw new HospitalApiError('ERR_FHIR_GENERATE_BAD_OPTION', { name: '--format', detail: `expected bundles, ndjson or both, got ${format}` });
  }
  const patients = typeof options.patients === 'string' && /^\d+$/.test(options.patients) ? Number(options.patients) : options.patients;
  const dataset = generateDataset({ patients: patients as number, seed: options.seed, ...(options.sizes ? { sizes: options.sizes } : {}) });
  // not ./fhir-data: that is the server's default --data directory
  const out = resolve(options.out ?? 'fhir-generated');
  try {
    mkdirSync(out, { recursive: true });
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_WRITE', { path: out, detail: (err as Error).message }, { cause: err });
  }
  const files: string[] = [];
  if (format !== 'ndjson') {
    const { shared, patients: bundles } = toTransactionBundles(dataset);
    // One file per shared Bundle keeps `fhir load DIR/*` ordered: shared targets exist before patients point at them.
    const sharedPath = join(out, '00-shared.json');
    if (shared.length !== 1) throw new HospitalApiError('ERR_INTERNAL', { detail: 'the shared pool must fit one Bundle' });
    writeFileAtomic(sharedPath, JSON.stringify(shared[0]) + '\n');
    files.push(sharedPath);
    const patientsPath = join(out, '01-patients.ndjson');
    await writeLines(patientsPath, (function* () { for (const b of bundles) yield JSON.stringify(b); })());
    files.push(patientsPath);
  }
  if (format !== 'bundles') {
    const path = join(out, 'resources.ndjson');
    await writeLines(path, toNdjsonLines(dataset));
    files.push(path);
  }
  const manifest = {
    seed: dataset.seed,
    careIdSystem: PLATFORM_CARE_ID_SYSTEM,
    counts: countByType(dataset),
    patients: dataset.patients.map((p) => ({ careId: p.careId, id: p.patient.id, size: p.size })),
  };
  const manifestPath = join(out, 'manifest.json');
  writeFileAtomic(manifestPath, JSON.stringify(manifest, null, 2) + '\n');
  files.push(manifestPath);
  const total = Object.values(manifest.counts).reduce((a, b) => a + b, 0);
  if (io.json) io.out(JSON.stringify({ ok: true, command: 'fhir generate', result: { out, files, total, counts: manifest.counts } }));
  else {
    io.out(`Generated ${dataset.patients.length} patients, ${total} resources (seed ${dataset.seed}) in ${out}`);
    for (const f of files) io.out(`  ${f}`);
    const toLoad = files.filter((f) => !f.endsWith('manifest.json') && !f.endsWith('resources.ndjson'));
    const at = options.dir === undefined ? '' : ` --dir ${shellWord(resolve(options.dir))}`;
    io.out(`Load with: hospital-api fhir load${at} ${(toLoad.length ? toLoad : files.slice(0, 1)).map(shellWord).join(' ')}`);
  }
  return 0;
}

/**
 * `hospital-api fhir load <files or directories…> [--url BASE] [--concurrency N] [--state FILE]`
 * Posts transaction/batch Bundles and NDJSON to a FHIR server, in file order (a directory:
 * its *.json and *.ndjson files in name order, files.ts)
 * (so `00-shared.json` lands before the patients that point at it), up to N
 * Bundles of a file at once. Progress goes to stderr. An interrupted load leaves
 * a state file (default `.fhir-load-state.json` next to the first file) and the
 * same command resumes from it; a complete load removes it. Loading twice
 * creates nothing new when the data carries identifiers (conditional creates).
 */
import { dirname, join, resolve } from 'node:path';
import { Agent } from 'undici';
import { HospitalApiError } from '../../errors/index.js';
import type { Io } from '../../output/io.js';
import { formatBytes } from '../../output/bytes.js';
import { createProgress } from '../../output/progress.js';
import { loadFiles } from './files.js';
import { postBundle, REFERENCE_NOT_FOUND } from './post.js';
import { fileSize, readUnits, type LoadUnit } from './sources.js';
import { LoadState } from './state.js';

export interface LoadOptions {
  files: string[];
  url?: string;
  /** Sent with every request: the installation's credential for its FHIR port (a secret, never printed). */
  headers?: Record<string, string>;
  concurrency?: number | string;
  state?: string;
}

export interface LoadSummary {
  files: number;
  bundles: number;
  skipped: number;
  created: number;
  kept: number;
  failed: number;
  seconds: number;
}

export const DEFAULT_FHIR_URL = 'http://127.0.0.1:8080/fhir';

function parseBase(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new HospitalApiError('ERR_FHIR_LOAD_BAD_URL', { url, detail: 'not a URL' });
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new HospitalApiError('ERR_FHIR_LOAD_BAD_URL', { url, detail: 'only http and https are supported' });
  if (u.username || u.password) throw new HospitalApiError('ERR_FHIR_LOAD_BAD_URL', { url: u.origin, detail: 'credentials in the URL are not accepted' });
  if (u.search || u.hash) throw new HospitalApiError('ERR_FHIR_LOAD_BAD_URL', { url, detail: 'a base URL has no query or fragment' });
  return u;
}

/** Loads and returns the counts. @throws ERR_FHIR_LOAD_* */
export async function load(options: LoadOptions, io: Io): Promise<LoadSummary> {
  if (!options.files?.length) throw new HospitalApiError('ERR_USAGE', { detail: 'name at least one file to load' });
  const base = parseBase(options.url ?? DEFAULT_FHIR_URL);
  const concurrency = Number(options.concurrency ?? 4);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) throw new HospitalApiError('ERR_USAGE', { detail: '--concurrency must be an integer 1..64' });
  const files = loadFiles(options.files);
  const sizes = files.map(fileSize); // fails early on a missing file, before anything is sent
  const statePath = resolve(options.state ?? join(dirname(files[0] as string), '.fhir-load-state.json'));
  const { state, resumed, otherUrl } = LoadState.open(statePath, base.href);
  if (otherUrl) io.warn(`ignoring ${statePath}: it was written for ${otherUrl}`);
  if (resumed) io.log(`resuming from ${statePath}`);

  const summary: LoadSummary = { files: files.length, bundles: 0, skipped: 0, created: 0, kept: 0, failed: 0, seconds: 0 };
  const started = Date.now();
  const total = sizes.reduce((a, b) => a + b, 0);
  const progress = createProgress('fhir load', total, process.stderr, 2000, { format: formatBytes, quiet: io.quiet });
  const agent = new Agent({ connections: concurrency, keepAliveTimeout: 10_000 });
  let firstFailure: { label: string; status: string; detail: string; code?: string } | undefined;
  let doneBytes = 0;
  try {
    for (const [i, file] of files.entries()) {
      const key = file; // by path: a file fixed after a rejected Bundle resumes where it stopped
      const inflight = new Set<Promise<void>>();
      let fileBytes = 0;
      let error: unknown;
      const send = async (unit: LoadUnit) => {
        const result = await postBundle(agent, base, unit.bundle, unit.label, options.headers);
        summary.bundles++;
        summary.created += result.created;
        summary.kept += result.kept;
        summary.failed += result.failed.length;
        const f = result.failed[0];
        if (f && !firstFailure) firstFailure = { label: `${unit.label} entry ${f.index}`, status: f.status, detail: f.detail, ...(f.code ? { code: f.code } : {}) };
        if (result.failed.length === 0) state.markDone(key, unit.index);
        fileBytes = Math.max(fileBytes, unit.offset);
        progress.update(doneBytes + fileBytes, `${summary.created + summary.kept} resources`);
      };
      for await (const unit of readUnits(file)) {
        if (error) break;
        if (state.isDone(key, unit.index)) {
          summary.skipped++;
          continue;
        }
        const p: Promise<void> = send(unit).catch((err: unknown) => void (error ??= err)).finally(() => inflight.delete(p));
        inflight.add(p);
        if (inflight.size >= concurrency) await Promise.race(inflight);
      }
      await Promise.all(inflight);
      if (error) throw error;
      doneBytes += sizes[i] as number;
    }
  } finally {
    summary.seconds = (Date.now() - started) / 1000;
    state.save();
    await agent.close();
  }
  progress.finish(`${summary.created} created, ${summary.kept} already there`);
  if (firstFailure) {
    if (firstFailure.code === REFERENCE_NOT_FOUND) {
      throw new HospitalApiError('ERR_FHIR_LOAD_NEEDS_BULK', { unit: firstFailure.label, detail: `${firstFailure.detail} (${summary.failed} entries failed)` });
    }
    throw new HospitalApiError('ERR_FHIR_LOAD_REJECTED', { unit: firstFailure.label, status: firstFailure.status, detail: `${firstFailure.detail} (${summary.failed} entries failed)` });
  }
  state.remove();
  return summary;
}

/** The `fhir load` command: @returns exit code */
export async function runLoad(options: LoadOptions, io: Io): Promise<number> {
  const s = await load(options, io);
  const rate = s.seconds > 0 ? Math.round((s.created + s.kept) / s.seconds) : 0;
  if (io.json) io.out(JSON.stringify({ ok: true, command: 'fhir load', result: s }));
  else io.out(`Loaded ${s.bundles} bundles from ${s.files} files: ${s.created} created, ${s.kept} already present${s.skipped ? `, ${s.skipped} bundles skipped (done before)` : ''} in ${s.seconds.toFixed(1)}s (${rate} resources/s)`);
  return 0;
}

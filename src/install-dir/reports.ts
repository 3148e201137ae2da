/**
 * The install directory's reports/ folder, as `verify` fills it: one signed
 * acceptance record per run, `acceptance-<UTC time>.json` with its detached
 * signature beside it (`.json.p7s`), names that sort in time order. Read by
 * the record chain (checks/record/chain.ts) and by the Hospital API's
 * acceptance gauges (issue 46), which must not depend on the checks.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HospitalApiError } from '../errors/index.js';

/** Records as verify writes them: acceptance-<UTC time>.json, whose names sort in time order. */
const RECORD_NAME = /^acceptance-\d{8}T\d{9}Z\.json$/;

/** The records of `folder`, oldest first (their names sort by the time they were tested). */
export function recordFiles(folder: string): string[] {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new HospitalApiError('ERR_FILE_READ', { path: folder, detail: (err as NodeJS.ErrnoException).code ?? String(err) }, { cause: err });
  }
  return names.filter((n) => RECORD_NAME.test(n)).sort();
}

export interface LatestAcceptance {
  file: string;
  accepted: boolean;
  /** When its checks ran (the record's testedAt), Unix milliseconds. */
  testedAtMs: number;
}

/** Records larger than this are not read for the gauges (a record is tens of KiB). */
const MAX_GAUGE_READ_BYTES = 4 * 1024 * 1024;

/**
 * The newest record of `folder` that has its signature beside it (a record is written after its
 * signature, so one without is being written or was not written by verify): its result and time.
 * Null when there is none, or when it cannot be read as a record.
 */
export function latestSignedAcceptance(folder: string): LatestAcceptance | null {
  let files: string[];
  try {
    files = recordFiles(folder);
  } catch {
    return null;
  }
  for (let i = files.length - 1; i >= 0; i--) {
    const file = join(folder, files[i] as string);
    if (!existsSync(`${file}.p7s`)) continue;
    try {
      if (statSync(file).size > MAX_GAUGE_READ_BYTES) return null;
      const doc = JSON.parse(readFileSync(file, 'utf8')) as { result?: unknown; testedAt?: unknown };
      const testedAtMs = typeof doc.testedAt === 'string' ? Date.parse(doc.testedAt) : NaN;
      if ((doc.result !== 'accepted' && doc.result !== 'rejected') || !Number.isFinite(testedAtMs)) return null;
      return { file, accepted: doc.result === 'accepted', testedAtMs };
    } catch {
      return null;
    }
  }
  return null;
}

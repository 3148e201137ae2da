/**
 * The record chain (issue 46): every record names the SHA-256 of the record written before it in
 * the same folder (`previousRecordSha256`, the first names none), inside what is signed; so a
 * record removed, altered, reordered or brought in from elsewhere breaks a link that no one can
 * mend without the signing key. As AWS CloudTrail's digest files name the previous digest
 * (CloudTrail User Guide, "Validating CloudTrail log file integrity").
 *
 * The last record cannot be proven present this way (nothing names it): the folder's newest
 * record is the head, and an auditor compares it with the one they signed.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { verifyDetached } from '../../tls/cms-verify.js';
import { recordFiles } from '../../install-dir/reports.js';

export function sha256Hex(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The SHA-256 of the newest record in `folder`, the one the next record names; null when there is none. */
export function chainHead(folder: string): string | null {
  const files = recordFiles(folder);
  const last = files[files.length - 1];
  return last ? sha256Hex(readFileSync(join(folder, last))) : null;
}

const LOCK_WAIT_MS = 15_000;
const LOCK_STALE_MS = 120_000;

/**
 * Runs `write` while no other verify of the same folder writes (a directory made with mkdir is the
 * lock: atomic on every filesystem), so two runs never name the same previous record. A lock older
 * than LOCK_STALE_MS was left by a run that died, and is taken over.
 */
export function withChainLock<T>(folder: string, write: () => T): T {
  mkdirSync(folder, { recursive: true });
  const lock = join(folder, '.chain.lock');
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let age = 0;
      try {
        age = Date.now() - statSync(lock).mtimeMs;
      } catch {
        continue; // released meanwhile
      }
      if (age > LOCK_STALE_MS) {
        rmdirSync(lock, { recursive: false });
        continue;
      }
      if (Date.now() > deadline) throw new HospitalApiError('ERR_INSTALL_RECORD_LOCKED', { path: lock });
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
    }
  }
  try {
    return write();
  } finally {
    rmdirSync(lock);
  }
}

export interface ChainEntry {
  record: string;
  sha256: string;
  /** `ok`, or why its signature does not verify against the CA. */
  signature: string;
  /** `first`, `ok`, or what is wrong with its link to the record before it. */
  link: string;
}

export interface ChainReport {
  ok: boolean;
  folder: string;
  records: ChainEntry[];
  /** One line per break, naming the record. */
  problems: string[];
}

function previousOf(bytes: Buffer): string | null | undefined {
  try {
    const v = (JSON.parse(bytes.toString('utf8')) as { previousRecordSha256?: unknown }).previousRecordSha256;
    return typeof v === 'string' ? v : v === null ? null : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Checks every record of `folder`: its signature against `caPem`, and that it names the record just
 * before it. Names what is removed (a record names one that is not in the folder), altered (its
 * signature fails, and the next one's link no longer matches it), reordered (a record names another
 * of the folder, not the one before it) or foreign (signed under another CA, or linked to nothing).
 */
export function verifyChain(folder: string, caPem: string): ChainReport {
  const files = recordFiles(folder);
  const entries: ChainEntry[] = [];
  const problems: string[] = [];
  const shaOf = new Map<string, string>();
  const read = files.map((name) => {
    const bytes = readFileSync(join(folder, name));
    const sha = sha256Hex(bytes);
    shaOf.set(sha, name);
    let signature = 'ok';
    try {
      const v = verifyDetached(bytes, readFileSync(join(folder, `${name}.p7s`), 'utf8'), caPem, 'record');
      if (!v.ok) signature = v.reason ?? 'does not verify';
    } catch (err) {
      signature = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no signature file (.p7s)' : String((err as Error).message ?? err);
    }
    return { name, bytes, sha, signature };
  });
  for (const [i, r] of read.entries()) {
    const named = previousOf(r.bytes);
    const before = read[i - 1];
    let link: string;
    if (named === undefined) link = 'names no previous record (not a chained record)';
    else if (i === 0) link = named === null ? 'first' : shaOf.has(named) ? `names ${shaOf.get(named)}, which comes after it (reordered)` : 'names a record that is not in the folder (removed before it)';
    else if (named === before!.sha) link = 'ok';
    else if (named === null) link = `names no previous record, though ${before!.name} comes before it (reordered or foreign)`;
    else if (shaOf.has(named)) link = `names ${shaOf.get(named)}, not ${before!.name} (reordered)`;
    else link = `names a record that is not in the folder: one was removed or altered before it (${before!.name} is the one before it now)`;
    entries.push({ record: r.name, sha256: r.sha, signature: r.signature, link });
    if (r.signature !== 'ok') problems.push(`${r.name}: signature ${r.signature} (altered, or signed under another CA: foreign)`);
    if (link !== 'ok' && link !== 'first') problems.push(`${r.name}: ${link}`);
  }
  return { ok: problems.length === 0 && files.length > 0, folder, records: entries, problems: files.length ? problems : [`no acceptance records in ${folder}`] };
}

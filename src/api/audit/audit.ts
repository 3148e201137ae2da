/**
 * The audit log (issue #2, hardened in issue #12): JSON lines appended to
 * AUDIT_LOG (mode 0600: it names patients). It never holds the token or the
 * API key: the record type below has no field that could carry them.
 *
 * Fail closed. Every write is awaited by the request it belongs to and is on
 * disk (fdatasync) before the promise resolves; when a write fails, the promise
 * rejects with ERR_API_AUDIT_UNAVAILABLE and the request gets no patient data.
 * Writes are grouped: the lines queued while one batch is being synced go out
 * together in the next one (one write and one fdatasync per batch), so the
 * cost of syncing is shared by concurrent requests.
 *
 * The file stays open between batches (issue 49: an open, a stat of the
 * handle and a close per batch were six of a record's eleven file calls, each
 * a trip through libuv's thread pool), but every batch first stats the path
 * and writes only to the file that is there now: a log moved away by
 * logrotate, or a path that was unwritable (full disk, a directory in its way)
 * and is writable again, is picked up by the next write with no restart, and
 * a batch that fails closes its file so that the next one opens the path
 * afresh. That is the automatic recovery: the next request, or /api/ready's
 * probe, finds out that writing works again. Two files are kept: one
 * appending, and one opened with O_DSYNC for a line whose request waits for
 * its sync anyway (prepare({ syncOnWrite }): the `end` line of a record); a
 * request may have either opened ahead of its batch (prepare: during the
 * patient search, while the last page is written; issue 28).
 *
 * No broken line, whatever the disk does (issue 24). A batch that fails half
 * written (ENOSPC after some bytes, EIO at the sync) is taken back at once: the
 * file is truncated to where the batch began. If even that fails, the next batch
 * first cuts the file back to its last complete line, and writes nothing while
 * it cannot; so every line on disk is a whole JSON line, each starting on a line
 * of its own, and `hospital-api audit verify` proves it.
 *
 * Tamper-evident (issue 46), after AWS CloudTrail's log file integrity
 * validation: each line ends with `"prev"`, the SHA-256 (hex) of the line
 * before it, its newline included (null for the first line of a log). Across
 * rotation the chain goes on: the first line of a new file (logrotate moved the
 * old one away, or copied and truncated it) names the old file's last line.
 * The writer knows its file by inode and size after its last batch; a file it
 * does not know (at start, or written by another process) is read once for its
 * line count and last line, and an empty one it does not know (at start, after
 * a rotation) continues from the state file `<log>.chain`, whose file it finds
 * by inode among the log's neighbours when it is still there. With a signing key (a
 * certificate of the install's CA), a seal line (`"phase":"seal"`) follows
 * unsealed lines within SEAL_INTERVAL_MS and when the log closes: a CMS
 * SignedData (cms-sign.ts, the acceptance records' signer, content attached so
 * that `openssl cms -verify` prints it) over the statement of the chain head:
 * the file's first line's hash, its line count before the seal and the last
 * line's hash. Seals are lines of the log itself, chained like the others: they
 * rotate with the lines they cover, a removed seal breaks the chain like any
 * removed line, and one file is all an auditor needs. Each seal is also kept
 * in `<log>.chain` (written atomically), so that lines removed from the end
 * together with the last seal are still found (audit-check.ts). Writing the
 * seal goes through the same batch as every line: a seal that cannot be
 * written fails its batch like any line (fail closed).
 */
import { hash, randomBytes } from 'node:crypto';
import { constants, mkdirSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { open, readdir, readFile, rename, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';
import { signAttached } from '../../tls/cms-sign.js';
import { sealKeySource, type AuditSealKey, type SealKeyEvent } from './seal-key.js';

export type AuditDecision = 'granted' | 'denied' | 'not-found' | 'ambiguous' | 'error';

/**
 * `started`: written (and synced) before the first byte of a patient record, so
 * a record cut off by a crash still leaves a line. `end`: the outcome, written
 * before the response ends. `probe`: /api/ready found the log writable again.
 */
export type AuditPhase = 'started' | 'end';

export interface AuditRecord {
  time: string;
  phase: AuditPhase;
  /** The server's own id of the request (its X-Request-Id response header). */
  requestId: string;
  /** The caller's X-Request-Id, when it sent a well-formed one: recorded, never trusted as the id. */
  callerRequestId: string | null;
  caller: string;
  platformCareId: string | null;
  /**
   * The identifier system the care id was searched in (PLATFORM_IDENTIFIER_SYSTEM);
   * with any system allowed, the system of the identifier that matched (null before or without a match).
   */
  identifierSystem: string | null;
  fhirPatientId: string | null;
  decision: AuditDecision;
  /** Error code when the request did not succeed, else null. */
  code: string | null;
  pages: number;
  resources: number;
  bytes: number;
  durationMs: number;
  status: number;
  /** True when the connection was cut mid-stream (the caller got no complete record). */
  aborted: boolean;
}

export interface AuditProbeRecord {
  time: string;
  phase: 'probe';
  detail: string;
}

/**
 * A seal (issue 46): the CMS SignedData `cms` (base64 DER, the statement attached) over
 * sealStatement(first, lines, head). Written by the log itself; `prev` is added like on every line.
 */
export interface AuditSealRecord {
  time: string;
  phase: 'seal';
  /** The SHA-256 of this file's first line (the file's identity, whatever it is renamed to), null when the seal is its first line. */
  first: string | null;
  /** Lines of this file before the seal. */
  lines: number;
  /** The SHA-256 of the last of them (of the line before the file when there is none). */
  head: string | null;
  cms: string;
}

/** The bytes a seal signs: one JSON object, its keys in this order, no spaces. */
export function sealStatement(first: string | null, lines: number, head: string | null): string {
  return JSON.stringify({ v: 1, log: 'hospital-api audit', first, lines, head });
}

/** The SHA-256 (hex) of one line as written, its newline included: the next line's `prev`. */
export function lineHash(line: string | Buffer): string {
  // One-shot (Node >= 21.7): no Hash object per line, the cheaper path for the short lines of a batch.
  return hash('sha256', line, 'hex');
}

/** The chain state file beside the log. */
export const chainStatePath = (log: string): string => `${log}.chain`;

/** What `<log>.chain` holds: the file last written (by inode) and its chain head, and the last seal. */
export interface ChainStateFile {
  v: 1;
  dev: number;
  ino: number;
  lines: number;
  first: string | null;
  head: string | null;
  /** The last seal line as written (without its newline), or null before the first seal. */
  seal: string | null;
}

/** At most this long between a line and the seal that covers it (issue 46: at least every 60 s while lines are written). */
export const SEAL_INTERVAL_MS = 60_000;

export interface AuditHealth {
  ok: boolean;
  /** errno code (ENOSPC, EISDIR…) of the last failure, when not ok. */
  reason: string | null;
}

/** One appended line: `written` once write() has put it in the file, `synced` once fdatasync has put it on disk. */
export interface AuditAppend {
  /** @throws ERR_API_AUDIT_UNAVAILABLE when the line could not be written (then `synced` rejects too) */
  written: Promise<void>;
  /** @throws ERR_API_AUDIT_UNAVAILABLE when the line could not be written or synced */
  synced: Promise<void>;
}

export interface PrepareOptions {
  /**
   * The next line's request will wait for its sync anyway (the `end` line of a record): the file
   * is opened with O_DSYNC, so its write returns with the line on disk and no fdatasync follows
   * (open(2): "as though each write(2) was followed by a call to fdatasync(2)"): one call less.
   */
  syncOnWrite?: boolean;
}

export interface AuditLog {
  /** Appends one line and syncs it. @throws ERR_API_AUDIT_UNAVAILABLE when it cannot be written */
  write(record: AuditRecord | AuditProbeRecord): Promise<void>;
  /**
   * Appends one line, telling apart its write and its sync, so a caller can
   * overlap the sync with work that sends nothing (the `started` line and the
   * record's FHIR fetches). `synced` is never left unobserved: it is safe to
   * await it late, or never when `written` rejects.
   */
  append(record: AuditRecord | AuditProbeRecord): AuditAppend;
  /**
   * Says how the next batch syncs (`syncOnWrite`, else by fdatasync) and opens
   * that file ahead when none is open, so that its open runs while the caller
   * does something else (the patient search before the `started` line, the
   * last page's write before the `end` line); a no-op when it is open. The
   * batch still writes only to the file at the path then (a log moved away
   * meanwhile is followed as before). Writes nothing.
   */
  prepare(options?: PrepareOptions): void;
  /** The outcome of the last write. */
  health(): AuditHealth;
  close(): Promise<void>;
}

interface Pending {
  /** The line's JSON without its `prev` (null: a seal, made when its batch is written). */
  json: string | null;
  written: () => void;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** The log fields of an audit write failure: the code, the message and, for the operator only, the file. */
export function auditFailureLog(err: unknown): { code: string; message: string; auditLog?: string } {
  const e = err as HospitalApiError;
  const path = e?.params?.path;
  return { code: e?.code ?? 'ERR_API_AUDIT_UNAVAILABLE', message: (err as Error)?.message ?? String(err), ...(typeof path === 'string' ? { auditLog: path } : {}) };
}

/** The file operations the log uses (tests put a disk that fails half-way behind them). */
export interface AuditFs {
  open(path: string, flags: string | number, mode: number): Promise<FileHandle>;
}

export type { AuditSealKey } from './seal-key.js';

export interface AuditLogOptions {
  fs?: AuditFs;
  /** The certificate and key that sign seals; without them no seal is written (audit verify then reports the lines unsealed). */
  seal?: AuditSealKey;
  /** The seal pair's files changed (cert renew): sealing with the new one, or why the one in use stays (seal-key.ts). */
  onSealKey?: (event: SealKeyEvent) => void;
  /** Seal within this long of a line (SEAL_INTERVAL_MS; tests shorten it). */
  sealIntervalMs?: number;
  /** An unfinished line (`bytes` long) was cut off the end of the file before appending. */
  onRepair?: (bytes: number) => void;
}

const NEWLINE = 0x0a;

/** Where the chain stands in a file: its inode, its size after the last line, its line count, first and last line hashes. */
interface ChainAt {
  /** Read from the file (not the writer's own), its last line no seal: lines another process left unsealed. */
  inherited?: boolean;
  dev: number;
  ino: number;
  size: number;
  lines: number;
  first: string | null;
  /** The hash of the last line, or the link the file's first line takes when it has none. */
  head: string | null;
}

/** Line count, first and last line hashes of the first `size` bytes of a file (whole lines: completeSize has cut the rest). */
async function scanLines(
  handle: FileHandle,
  size: number,
  /** Go on from here (a line boundary) with what was counted before it. */
  from0: { offset: number; lines: number; first: string | null; last: string | null } = { offset: 0, lines: 0, first: null, last: null },
): Promise<{ lines: number; first: string | null; last: string | null; sealed: boolean }> {
  const chunk = Buffer.alloc(256 * 1024);
  let { lines, first, last } = from0;
  let pending: Buffer[] = [];
  let lastLine = Buffer.alloc(0);
  for (let offset = from0.offset; offset < size; ) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, size - offset), offset);
    if (bytesRead === 0) break;
    let from = 0;
    for (let nl = chunk.indexOf(NEWLINE, 0); nl >= 0 && nl < bytesRead; nl = chunk.indexOf(NEWLINE, from)) {
      pending.push(chunk.subarray(from, nl + 1));
      const line = Buffer.concat(pending);
      const hash = lineHash(line);
      lastLine = line;
      pending = [];
      lines++;
      first ??= hash;
      last = hash;
      from = nl + 1;
    }
    if (from < bytesRead) pending.push(Buffer.from(chunk.subarray(from, bytesRead)));
    offset += bytesRead;
  }
  let sealed = false;
  try {
    sealed = (JSON.parse(lastLine.toString('utf8')) as { phase?: unknown }).phase === 'seal';
  } catch {
    // an empty file, or a last line that is no audit line: not a seal
  }
  return { lines, first, last, sealed };
}

async function readChainState(log: string): Promise<ChainStateFile | null> {
  try {
    const value = JSON.parse(await readFile(chainStatePath(log), 'utf8')) as ChainStateFile;
    return value && value.v === 1 ? value : null;
  } catch {
    return null;
  }
}

/**
 * The link an empty log's first line takes when the writer has no chain in memory (a start after a
 * rotation): the last line of the file the state file names, found by inode among the log's neighbours
 * (logrotate renames it), else the head the state file kept; null without a state file (a new log).
 */
async function headBeforeEmpty(log: string, fsOpen: AuditFs['open']): Promise<string | null> {
  const state = await readChainState(log);
  if (!state) return null;
  const dir = dirname(log);
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (name === basename(log) || !name.startsWith(basename(log))) continue;
    const at = await stat(join(dir, name)).catch(() => null);
    if (!at?.isFile() || at.ino !== state.ino || at.dev !== state.dev || at.size === 0) continue;
    const handle = await fsOpen(join(dir, name), 'r', 0o600);
    try {
      const { last } = await scanLines(handle, await completeSize(handle, at.size));
      if (last) return last;
    } finally {
      await handle.close();
    }
  }
  return state.head;
}

/** Write-temp-fsync-rename, asynchronously (the state file is written after each seal, while requests go on). */
async function writeAtomic(path: string, data: string, fsOpen: AuditFs['open']): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await fsOpen(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, path);
}

/**
 * The size the file must have for its last line to be complete: `size` when
 * it is empty or ends in a newline, else the offset after its last newline.
 */
async function completeSize(handle: FileHandle, size: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024);
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const { bytesRead } = await handle.read(chunk, 0, end - start, start);
    const part = chunk.subarray(0, bytesRead);
    if (end === size && part[part.length - 1] === NEWLINE) return size;
    const last = part.lastIndexOf(NEWLINE);
    if (last >= 0) return start + last + 1;
    end = start;
  }
  return 0;
}

export function openAuditLog(path: string, onChange: (health: AuditHealth) => void = () => {}, options: AuditLogOptions = {}): AuditLog {
  const fs: AuditFs = options.fs ?? { open };
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  } catch {
    // reported by the first write
  }
  let health: AuditHealth = { ok: true, reason: null };
  let queue: Pending[] = [];
  /** The chain where the last batch left it (null: not known, read from the file at the next batch). */
  let chain: ChainAt | null = null;
  const sealKey = options.seal;
  // re-read when its files change (cert renew), so the next seal uses the renewed certificate without a restart
  const sealSource = sealKey ? sealKeySource(sealKey, options.onSealKey) : null;
  const sealEvery = options.sealIntervalMs ?? SEAL_INTERVAL_MS;
  /** Lines written since the last seal, and the timer that will seal them. */
  let unsealed = 0;
  let sealTimer: NodeJS.Timeout | null = null;
  let closing = false;
  // A key that cannot sign stops the start, not the first seal a minute later.
  if (sealKey) signAttached(Buffer.from('probe'), sealKey.certPem, sealKey.keyPem);
  let flushing: Promise<void> | null = null;

  const setHealth = (next: AuditHealth): void => {
    const changed = next.ok !== health.ok;
    health = next;
    if (changed) onChange(next);
  };

  // Whether the file's tail must be checked before the next batch: at the first write (an earlier
  // process may have died mid-line) and after a failed batch (its take-back may have failed too).
  let checkTail = true;

  /** A file opened for a batch; `stat`: the file at the path as the batch starts; `syncOnWrite` when it was opened with O_DSYNC (its write is its sync). */
  interface Opened {
    handle: FileHandle;
    stat: Stats;
    syncOnWrite: boolean;
  }
  const openFile = (syncOnWrite = false): Promise<FileHandle> =>
    fs.open(path, syncOnWrite ? constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC : 'a', 0o600);
  /** A file kept open between batches, and the file it is (its stat, read from the handle once, as it opened). */
  interface Kept {
    handle: FileHandle;
    at: Stats;
  }
  /** The two files kept open (or opening): index 1 is the O_DSYNC one. */
  const kept: Array<Promise<Kept> | null> = [null, null];
  /** How the next batch syncs (prepare's `syncOnWrite`); the batch takes it and it goes back to fdatasync. */
  let nextSyncOnWrite = false;

  const keep = (syncOnWrite: boolean): Promise<Kept> => {
    const opening = openFile(syncOnWrite).then(async (handle): Promise<Kept> => {
      try {
        return { handle, at: await handle.stat() };
      } catch (err) {
        await handle.close().catch(() => undefined);
        throw err;
      }
    });
    // A failed open is reported by the batch that takes it.
    opening.catch(() => undefined);
    return opening;
  };

  /** Closes a kept file (once: it is no longer kept when this is called). */
  const release = (which: Promise<Kept> | null): Promise<void> =>
    which ? which.then((k) => k.handle.close()).catch(() => undefined) : Promise.resolve();

  /** The kept file of this kind is dropped and closed: the next batch of its kind opens the path again. */
  const drop = (syncOnWrite: boolean): Promise<void> => {
    const i = syncOnWrite ? 1 : 0;
    const which = kept[i] ?? null;
    kept[i] = null;
    return release(which);
  };

  /**
   * The file for the batch starting now, and the file at the path as it starts (one stat per batch): the kept
   * file of the batch's kind when it is still the file at the path; else that one is closed and the path opened.
   */
  const takeFile = async (): Promise<Opened> => {
    // prepare() asks for O_DSYNC only where the platform has it
    const syncOnWrite = nextSyncOnWrite;
    nextSyncOnWrite = false;
    const i = syncOnWrite ? 1 : 0;
    const [now, held] = await Promise.all([stat(path).catch(() => null), kept[i]?.catch(() => null) ?? null]);
    // Still the file at the path? One moved away, deleted or replaced since (logrotate, an operator, a directory in
    // its way) must not take the line: a deleted file's line would be "synced" nowhere (fail closed).
    if (held && now && now.ino === held.at.ino && now.dev === held.at.dev) return { handle: held.handle, stat: now, syncOnWrite };
    // Its close does not hold up the batch: a line is reported once on disk, whatever closing a file does.
    void drop(syncOnWrite);
    const opening = keep(syncOnWrite);
    kept[i] = opening;
    const fresh = await opening;
    // Its size as it opened, now, with no batch between: the file's.
    return { handle: fresh.handle, stat: fresh.at, syncOnWrite };
  };

  /**
   * One batch: its lines written (onWritten), then on disk (onSynced, before
   * the file is closed: a closed file adds nothing to a synced line's safety).
   */
  /**
   * Where the chain stands in the file about to be written (`stat` is its state now, `start` its size once
   * whole): the chain in memory when this is still its file at its size; else the file's own last line when
   * it has lines; else (an empty file: a new log, or one just rotated) the head in memory, or the state file's.
   */
  const chainFor = async (handle: FileHandle, at: Stats, start: number, regular: boolean): Promise<ChainAt> => {
    const here = { dev: at.dev, ino: at.ino, size: start };
    if (chain && chain.dev === at.dev && chain.ino === at.ino && chain.size === start) return chain;
    if (regular && start > 0) {
      const reader = await fs.open(path, 'r', 0o600);
      try {
        // The file at the path moved since `handle` was opened (the handle is write-only): this batch fails, the next one follows.
        if ((await reader.stat()).ino !== at.ino) throw Object.assign(new Error('the audit log moved while it was read'), { code: 'ESTALE' });
        // Lines appended after ours by another writer: read from where ours ended, not the whole file again.
        const after = chain && chain.dev === at.dev && chain.ino === at.ino && chain.size < start ? { offset: chain.size, lines: chain.lines, first: chain.first, last: chain.head } : undefined;
        const { lines, first, last, sealed } = await scanLines(reader, start, after);
        return { ...here, lines, first, head: last, inherited: !sealed };
      } finally {
        await reader.close();
      }
    }
    return { ...here, lines: 0, first: null, head: chain ? chain.head : await headBeforeEmpty(path, fs.open) };
  };

  /** The batch's bytes, each line linked to the one before it; the chain after it; the last seal line written; the records after it. */
  const chainLines = (batch: Pending[], at: ChainAt): { data: string; next: ChainAt; seal: string | null; records: number } => {
    let { lines, first, head } = at;
    let data = '';
    let seal: string | null = null;
    let records = 0;
    // Lines an earlier process left unsealed (killed, or serve restarted after a backup was taken) are sealed first.
    const entries = at.inherited && sealKey && !batch.some((p) => p.json === null) ? [{ json: null } as Pending, ...batch] : batch;
    for (const p of entries) {
      let json = p.json;
      if (json === null) {
        const statement = sealStatement(first, lines, head);
        const key = sealSource!.current();
        const pem = signAttached(Buffer.from(statement), key.certPem, key.keyPem);
        const cms = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
        const record: AuditSealRecord = { time: new Date().toISOString(), phase: 'seal', first, lines, head, cms };
        json = JSON.stringify(record);
        records = 0;
      } else {
        records++;
      }
      const line = `${json.slice(0, -1)},"prev":${JSON.stringify(head)}}\n`;
      if (p.json === null) seal = line.slice(0, -1);
      const hash = lineHash(line);
      first ??= hash;
      head = hash;
      lines++;
      data += line;
    }
    return { data, next: { ...at, inherited: false, size: at.size + Buffer.byteLength(data), lines, first, head }, seal, records };
  };

  const writeBatch = async (batch: Pending[], onWritten: () => void, onSynced: () => void): Promise<void> => {
    // Write-only, as before: opening a FIFO or a hung mount blocks here, and /api/ready's deadline reports it.
    await writeOpened(await takeFile(), batch, onWritten, onSynced);
  };

  const writeOpened = async ({ handle, stat, syncOnWrite }: Opened, batch: Pending[], onWritten: () => void, onSynced: () => void): Promise<void> => {
    try {
      // A FIFO or a device (/dev/full in tests) has no tail to check or take back.
      const regular = stat.isFile();
      let start = stat.size;
      if (regular && checkTail && start > 0) {
        const reader = await fs.open(path, 'r', 0o600);
        try {
          start = await completeSize(reader, stat.size);
        } finally {
          await reader.close();
        }
        if (start < stat.size) {
          // a line left unfinished (a failed batch that could not be taken back, or a crash mid-write)
          await handle.truncate(start);
          options.onRepair?.(stat.size - start);
        }
      }
      const { data, next, seal, records } = chainLines(batch, await chainFor(handle, stat, start, regular));
      try {
        await handle.writeFile(data);
        onWritten();
        if (!syncOnWrite) await handle.datasync();
        checkTail = false;
        // A FIFO or a device keeps no chain to continue.
        chain = regular ? next : null;
        unsealed = seal === null ? unsealed + records : records;
        if (seal !== null && regular) {
          const state: ChainStateFile = { v: 1, dev: next.dev, ino: next.ino, lines: next.lines, first: next.first, head: next.head, seal };
          // After the seal is on disk; a state file that cannot be written leaves the log as it is (verify reads the log's own seals).
          await writeAtomic(chainStatePath(path), `${JSON.stringify(state)}\n`, fs.open).catch(() => undefined);
        }
      } catch (err) {
        checkTail = true;
        // Take back whatever part of the batch reached the file; if that fails too, the next batch cuts it.
        if (regular) await handle.truncate(start).then(() => handle.datasync()).catch(() => undefined);
        throw err;
      }
      onSynced();
    } catch (err) {
      checkTail = true;
      // The next batch opens the path afresh (a disk that failed may be another one by then).
      void drop(syncOnWrite);
      throw err;
    }
  };

  const flush = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      let synced = false;
      try {
        await writeBatch(
          batch,
          () => {
            for (const p of batch) p.written();
          },
          () => {
            synced = true;
            setHealth({ ok: true, reason: null });
            for (const p of batch) p.resolve();
          },
        );
      } catch (err) {
        // Only the close failed: the batch is on disk and its requests were told so.
        if (synced) continue;
        const reason = (err as NodeJS.ErrnoException).code ?? 'write failed';
        // `path` is for the operator's log (auditFailureLog), not the message: that goes to callers.
        setHealth({ ok: false, reason });
        const error = new HospitalApiError('ERR_API_AUDIT_UNAVAILABLE', { path, detail: reason }, { cause: err });
        for (const p of batch) p.reject(error);
      }
    }
    flushing = null;
    armSeal();
  };

  /** Seals the lines written since the last seal within sealEvery (nothing to seal, no key, or already armed: nothing). */
  const armSeal = (): void => {
    if (!sealKey || unsealed === 0 || sealTimer || closing) return;
    sealTimer = setTimeout(() => {
      sealTimer = null;
      // A seal that fails is tried again by the next batch's armSeal (its lines stay unsealed).
      void enqueue(null).synced.catch(() => undefined);
    }, sealEvery);
    sealTimer.unref();
  };

  const append = (record: AuditRecord | AuditProbeRecord): AuditAppend => enqueue(JSON.stringify(record));

  const enqueue = (json: string | null): AuditAppend => {
    let written!: () => void;
    let writeFailed!: (err: Error) => void;
    const writtenP = new Promise<void>((resolve, reject) => {
      written = resolve;
      writeFailed = reject;
    });
    const synced = new Promise<void>((resolve, reject) => {
      queue.push({
        json,
        written,
        resolve,
        // Settles `written` too (a no-op once it has resolved): a line that failed before its write was never written.
        reject: (err) => {
          writeFailed(err);
          reject(err);
        },
      });
      flushing ??= flush();
    });
    // Observed here so a caller that awaits only `written` (which failed) leaves no unhandled rejection.
    synced.catch(() => undefined);
    writtenP.catch(() => undefined);
    return { written: writtenP, synced };
  };

  return {
    write: (record) => append(record).synced,
    append,
    prepare(options = {}) {
      // Where the platform has no O_DSYNC (Windows), the line is synced by fdatasync as usual.
      nextSyncOnWrite = options.syncOnWrite === true && constants.O_DSYNC !== undefined;
      const i = nextSyncOnWrite ? 1 : 0;
      if (closing || kept[i]) return;
      kept[i] = keep(nextSyncOnWrite);
    },
    health: () => health,
    async close() {
      while (flushing) await flushing;
      closing = true;
      if (sealTimer) clearTimeout(sealTimer);
      sealTimer = null;
      // The last lines are sealed when the log closes (serve stopping); a seal that cannot be written is reported, not thrown.
      if (sealKey && unsealed > 0) await enqueue(null).synced.catch(() => undefined);
      while (flushing) await flushing;
      await Promise.all([drop(false), drop(true)]);
    },
  };
}

/**
 * The audit log (issue #2, hardened in issue #12): JSON lines appended to
 * AUDIT_LOG (mode 0600: it names patients). It never holds the token or the
 * API key: the record type below has no field that could carry them.
 *
 * Fail closed. Every write is awaited by the request it belongs to and is on
 * disk (fdatasync) before the promise resolves; when a write fails, the promise
 * rejects with ERR_API_AUDIT_UNAVAILABLE and the request gets no patient data.
 * Writes are grouped: the lines queued while one batch is being synced go out
 * together in the next one (one open/write/fdatasync/close per batch), so the
 * cost of syncing is shared by concurrent requests.
 *
 * The file is opened for each batch rather than once: a log moved away by
 * logrotate, or a path that was unwritable (full disk, a directory in its way)
 * and is writable again, is picked up by the next write with no restart.
 * That is the automatic recovery: the next request, or /api/ready's probe,
 * finds out that writing works again. A request may open it for its next
 * batch ahead of time (prepare: during the patient search, while the last
 * page is written; issue 28), and such a file is used within
 * PREPARED_MAX_AGE_MS or opened again.
 *
 * No broken line, whatever the disk does (issue 24). A batch that fails half
 * written (ENOSPC after some bytes, EIO at the sync) is taken back at once: the
 * file is truncated to where the batch began. If even that fails, the next batch
 * first cuts the file back to its last complete line, and writes nothing while
 * it cannot; so every line on disk is a whole JSON line, each starting on a line
 * of its own, and `hospital-api audit verify` proves it.
 */
import { constants, mkdirSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { HospitalApiError } from '../../errors/index.js';

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
   * Opens the file for the next batch ahead of time, so that its open runs
   * while the caller does something else (the patient search before the
   * `started` line, the last page's write before the `end` line); a no-op when
   * a handle is already open ahead. The next batch within PREPARED_MAX_AGE_MS
   * uses it, a later one opens the file again (a log moved away meanwhile is
   * followed as before). Writes nothing.
   */
  prepare(options?: PrepareOptions): void;
  /** The outcome of the last write. */
  health(): AuditHealth;
  close(): Promise<void>;
}

interface Pending {
  line: string;
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

export interface AuditLogOptions {
  fs?: AuditFs;
  /** An unfinished line (`bytes` long) was cut off the end of the file before appending. */
  onRepair?: (bytes: number) => void;
}

const NEWLINE = 0x0a;

/** How long a handle opened ahead (AuditLog.prepare) may wait for its batch. */
export const PREPARED_MAX_AGE_MS = 1000;

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
  let flushing: Promise<void> | null = null;

  const setHealth = (next: AuditHealth): void => {
    const changed = next.ok !== health.ok;
    health = next;
    if (changed) onChange(next);
  };

  // Whether the file's tail must be checked before the next batch: at the first write (an earlier
  // process may have died mid-line) and after a failed batch (its take-back may have failed too).
  let checkTail = true;

  /**
   * A file opened for a batch; `stat` when it was read ahead and is still the file's size;
   * `syncOnWrite` when it was opened with O_DSYNC (its write is its sync).
   */
  interface Opened {
    handle: FileHandle;
    stat: Stats | null;
    syncOnWrite: boolean;
  }
  const openFile = (syncOnWrite = false): Promise<FileHandle> =>
    fs.open(path, syncOnWrite ? constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC : 'a', 0o600);
  /** A batch is between its start and its sync (or its take-back): the file's size is moving. */
  let writing = false;
  /**
   * A file opened (and stat'ed) ahead of its batch by prepare(), when, and whether its size can serve
   * that batch: when it was read while no batch was being written. (The next batch takes it, so no
   * other batch runs between the two.)
   */
  let prepared: { opened: Promise<Opened>; at: number; idle: boolean } | null = null;

  const closeAhead = (ahead: { opened: Promise<Opened> } | null): Promise<void> =>
    ahead ? ahead.opened.then((o) => o.handle.close()).catch(() => undefined) : Promise.resolve();

  /**
   * The file for the batch starting now: the one opened ahead when it is fresh and
   * still the file at the path (with the size read ahead when that is still the
   * file's), else opened now; one that is not used is closed.
   */
  const takeFile = async (): Promise<Opened> => {
    const ahead = prepared;
    prepared = null;
    if (ahead && performance.now() - ahead.at <= PREPARED_MAX_AGE_MS) {
      const opened = await ahead.opened.catch(() => null);
      // Still the file at the path? One moved away, deleted or replaced since (logrotate, an operator, a directory in
      // its way) must not take the line: a deleted file's line would be "synced" nowhere (fail closed).
      const now = opened?.stat ? await stat(path).catch(() => null) : null;
      if (opened && now && now.ino === opened.stat?.ino && now.dev === opened.stat.dev) {
        return ahead.idle ? opened : { ...opened, stat: null };
      }
    }
    void closeAhead(ahead);
    return { handle: await openFile(), stat: null, syncOnWrite: false };
  };

  /**
   * One batch: its lines written (onWritten), then on disk (onSynced, before
   * the file is closed: a closed file adds nothing to a synced line's safety).
   */
  const writeBatch = async (data: string, onWritten: () => void, onSynced: () => void): Promise<void> => {
    // Write-only, as before: opening a FIFO or a hung mount blocks here, and /api/ready's deadline reports it.
    const opened = takeFile();
    writing = true;
    try {
      await writeOpened(await opened, data, onWritten, onSynced);
    } finally {
      writing = false;
    }
  };

  const writeOpened = async ({ handle, stat: ahead, syncOnWrite }: Opened, data: string, onWritten: () => void, onSynced: () => void): Promise<void> => {
    try {
      const stat = ahead ?? (await handle.stat());
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
      try {
        await handle.writeFile(data);
        onWritten();
        if (!syncOnWrite) await handle.datasync();
        checkTail = false;
      } catch (err) {
        checkTail = true;
        // Take back whatever part of the batch reached the file; if that fails too, the next batch cuts it.
        if (regular) await handle.truncate(start).then(() => handle.datasync()).catch(() => undefined);
        writing = false;
        throw err;
      }
      writing = false;
      onSynced();
    } catch (err) {
      checkTail = true;
      throw err;
    } finally {
      await handle.close();
    }
  };

  const flush = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      let synced = false;
      try {
        await writeBatch(
          batch.map((p) => p.line).join(''),
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
  };

  const append = (record: AuditRecord | AuditProbeRecord): AuditAppend => {
    let written!: () => void;
    let writeFailed!: (err: Error) => void;
    const writtenP = new Promise<void>((resolve, reject) => {
      written = resolve;
      writeFailed = reject;
    });
    const synced = new Promise<void>((resolve, reject) => {
      queue.push({
        line: `${JSON.stringify(record)}\n`,
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
      if (prepared && performance.now() - prepared.at <= PREPARED_MAX_AGE_MS) return;
      void closeAhead(prepared);
      // Where the platform has no O_DSYNC (Windows), the line is synced by fdatasync as usual.
      const syncOnWrite = options.syncOnWrite === true && constants.O_DSYNC !== undefined;
      const opened = openFile(syncOnWrite).then(async (handle): Promise<Opened> => ({ handle, stat: await handle.stat().catch(() => null), syncOnWrite }));
      // A failed open is reported by the batch that takes it, as its own open would be.
      opened.catch(() => undefined);
      prepared = { opened, at: performance.now(), idle: !writing };
    },
    health: () => health,
    async close() {
      while (flushing) await flushing;
      const ahead = prepared;
      prepared = null;
      await closeAhead(ahead);
    },
  };
}

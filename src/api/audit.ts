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
 * finds out that writing works again.
 */
import { mkdirSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { HospitalApiError } from '../errors/index.js';

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

export interface AuditLog {
  /** Appends one line and syncs it. @throws ERR_API_AUDIT_UNAVAILABLE when it cannot be written */
  write(record: AuditRecord | AuditProbeRecord): Promise<void>;
  /** The outcome of the last write. */
  health(): AuditHealth;
  close(): Promise<void>;
}

interface Pending {
  line: string;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** The log fields of an audit write failure: the code, the message and, for the operator only, the file. */
export function auditFailureLog(err: unknown): { code: string; message: string; auditLog?: string } {
  const e = err as HospitalApiError;
  const path = e?.params?.path;
  return { code: e?.code ?? 'ERR_API_AUDIT_UNAVAILABLE', message: (err as Error)?.message ?? String(err), ...(typeof path === 'string' ? { auditLog: path } : {}) };
}

export function openAuditLog(path: string, onChange: (health: AuditHealth) => void = () => {}): AuditLog {
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

  const writeBatch = async (data: string): Promise<void> => {
    const handle = await open(path, 'a', 0o600);
    try {
      await handle.writeFile(data);
      await handle.datasync();
    } finally {
      await handle.close();
    }
  };

  const flush = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        await writeBatch(batch.map((p) => p.line).join(''));
        setHealth({ ok: true, reason: null });
        for (const p of batch) p.resolve();
      } catch (err) {
        const reason = (err as NodeJS.ErrnoException).code ?? 'write failed';
        // `path` is for the operator's log (auditFailureLog), not the message: that goes to callers.
        setHealth({ ok: false, reason });
        const error = new HospitalApiError('ERR_API_AUDIT_UNAVAILABLE', { path, detail: reason }, { cause: err });
        for (const p of batch) p.reject(error);
      }
    }
    flushing = null;
  };

  return {
    write(record) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ line: `${JSON.stringify(record)}\n`, resolve, reject });
        flushing ??= flush();
      });
    },
    health: () => health,
    async close() {
      while (flushing) await flushing;
    },
  };
}

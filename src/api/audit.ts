/**
 * The audit log (issue #2): one JSON line per POST /api/patients, appended to
 * AUDIT_LOG (mode 0600: it names patients). It never holds the token or the
 * API key: the record type below has no field that could carry them.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';

export type AuditDecision = 'granted' | 'denied' | 'not-found' | 'ambiguous' | 'error';

export interface AuditRecord {
  time: string;
  requestId: string;
  caller: string;
  platformCareId: string | null;
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

export interface AuditLog {
  write(record: AuditRecord): void;
  close(): Promise<void>;
}

export function openAuditLog(path: string): AuditLog {
  mkdirSync(dirname(path), { recursive: true });
  const stream: WriteStream = createWriteStream(path, { flags: 'a', mode: 0o600 });
  let failed: Error | null = null;
  stream.on('error', (err) => {
    failed = err;
    process.stderr.write(`hospital-api serve: audit log ${path} failed: ${err.message}\n`);
  });
  return {
    write(record) {
      if (!failed) stream.write(`${JSON.stringify(record)}\n`);
    },
    close: () => new Promise((resolve) => stream.end(() => resolve())),
  };
}

/**
 * `hospital-api audit disclosures` (issue 46): every time one patient's data
 * went out, read from audit files that passed audit-check.ts (the command
 * refuses any other). What a hospital answers when a patient asks who received
 * their record.
 *
 * A disclosure is a request for the patient (by platform care id or FHIR id)
 * whose `end` line says bytes went out (granted, or cut mid-stream), or whose
 * `started` line has no `end` line in the files (the process died while the
 * record was being sent: some of it may have gone out).
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { HospitalApiError } from '../../errors/index.js';
import type { AuditRecord } from './audit.js';

export interface Disclosure {
  time: string;
  caller: string;
  requestId: string;
  /** The end line's decision, or `started, no end line`. */
  decision: string;
  resources: number | null;
  bytes: number | null;
  platformCareId: string | null;
  fhirPatientId: string | null;
  aborted: boolean | null;
  file: string;
  /** 1-based, in `file`. */
  line: number;
}

export interface DisclosureWindow {
  since: number | null;
  until: number | null;
}

/** The disclosures of `patient` in `files` (oldest first), in log order. @throws ERR_FILE_READ */
export async function readDisclosures(files: string[], patient: string, window: DisclosureWindow): Promise<Disclosure[]> {
  const out: Disclosure[] = [];
  /** Started lines still waiting for their end line, by request id. */
  const open = new Map<string, Disclosure>();
  const inWindow = (time: string): boolean => {
    const at = Date.parse(time);
    return (window.since === null || at >= window.since) && (window.until === null || at <= window.until);
  };
  for (const file of files) {
    let n = 0;
    try {
      const input = file.endsWith('.gz') ? createReadStream(file).pipe(createGunzip()) : createReadStream(file);
      for await (const text of createInterface({ input, crlfDelay: Infinity })) {
        n++;
        let record: Partial<AuditRecord> & { phase?: string };
        try {
          record = JSON.parse(text) as typeof record;
        } catch {
          continue; // the file passed audit verify: only an empty last line can be here
        }
        if (record.phase !== 'started' && record.phase !== 'end') continue;
        if (record.platformCareId !== patient && record.fhirPatientId !== patient) continue;
        const requestId = String(record.requestId);
        if (record.phase === 'started') {
          open.set(requestId, {
            time: String(record.time), caller: String(record.caller), requestId, decision: 'started, no end line', resources: null, bytes: null,
            platformCareId: record.platformCareId ?? null, fhirPatientId: record.fhirPatientId ?? null, aborted: null, file, line: n,
          });
          continue;
        }
        open.delete(requestId);
        if (record.decision !== 'granted' && !(typeof record.bytes === 'number' && record.bytes > 0)) continue;
        if (!inWindow(String(record.time))) continue;
        out.push({
          time: String(record.time), caller: String(record.caller), requestId, decision: String(record.decision),
          resources: record.resources ?? null, bytes: record.bytes ?? null, platformCareId: record.platformCareId ?? null,
          fhirPatientId: record.fhirPatientId ?? null, aborted: record.aborted ?? null, file, line: n,
        });
      }
    } catch (err) {
      throw new HospitalApiError('ERR_FILE_READ', { path: file, detail: (err as NodeJS.ErrnoException).code ?? 'read failed' }, { cause: err });
    }
  }
  for (const started of open.values()) if (inWindow(started.time)) out.push(started);
  return out.sort((a, b) => a.time.localeCompare(b.time));
}

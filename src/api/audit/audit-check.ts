/**
 * The reader of an audit log (`hospital-api audit verify`): proves that every
 * line is a whole JSON line of the log's format, and names each one that is
 * not by its line number. It reports no line's content: the log names patients.
 */
import { createReadStream } from 'node:fs';
import { HospitalApiError } from '../../errors/index.js';

const PHASES = ['started', 'end', 'probe'] as const;
/** Broken lines listed one by one; past this, only counted. */
const LISTED = 100;

export interface BrokenLine {
  /** 1-based. */
  line: number;
  reason: string;
}

export interface AuditFileReport {
  file: string;
  /** Lines in the file, a last line without its newline included. */
  lines: number;
  phases: Record<(typeof PHASES)[number], number>;
  broken: number;
  /** The first broken lines (at most 100), in file order. */
  brokenLines: BrokenLine[];
  ok: boolean;
}

/** Why `text` (one line, without its newline) is not an audit line, or null when it is one. */
function problem(text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text.length === 0 ? 'empty line' : 'not JSON';
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'not a JSON object';
  const record = value as { phase?: unknown; time?: unknown };
  if (!PHASES.includes(record.phase as (typeof PHASES)[number])) return 'no phase started, end or probe';
  if (typeof record.time !== 'string') return 'no time';
  return null;
}

/** Reads the file once, line by line. @throws ERR_FILE_READ when it cannot be read */
export async function checkAuditFile(file: string): Promise<AuditFileReport> {
  const report: AuditFileReport = { file, lines: 0, phases: { started: 0, end: 0, probe: 0 }, broken: 0, brokenLines: [], ok: true };
  const note = (text: string, unfinished: boolean): void => {
    report.lines++;
    const why = unfinished ? 'unfinished last line (no newline)' : problem(text);
    if (why === null) {
      report.phases[(JSON.parse(text) as { phase: (typeof PHASES)[number] }).phase]++;
      return;
    }
    report.broken++;
    if (report.brokenLines.length < LISTED) report.brokenLines.push({ line: report.lines, reason: why });
  };
  let rest = '';
  try {
    for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 256 * 1024 })) {
      const parts = (rest + (chunk as string)).split('\n');
      rest = parts.pop() as string;
      for (const line of parts) note(line, false);
    }
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path: file, detail: (err as NodeJS.ErrnoException).code ?? 'read failed' }, { cause: err });
  }
  if (rest.length > 0) note(rest, true);
  report.ok = report.broken === 0;
  return report;
}

/**
 * The reader of an audit log (`hospital-api audit verify`): proves that every
 * line is a whole JSON line of the log's format, and that the chain of issue 46
 * holds (audit.ts): each line names the SHA-256 of the line before it, across
 * the log's rotated files too, and signed seals cover the lines. It names each
 * line that breaks it by its line number, never by its content: the log names
 * patients.
 *
 * What a broken link means, where it can be told (a check in the manner of
 * CloudTrail's `validate-logs`, which names the missing or changed file):
 * - a line whose `prev` is the hash of another line of the set: out of order;
 * - else the next valid seal's count tells a removal (it counts more lines
 *   before it than there are) from an edit (as many: the line before the
 *   break changed); with no seal after it, both are named;
 * - a seal whose signature fails or does not chain to the CA: a foreign seal;
 * - lines written after the last seal of the newest file, older than the seal
 *   interval and a grace: a missing seal (a seal covers every line before it
 *   through the chain, so only the newest lines can lack one; a seal removed
 *   elsewhere breaks the chain); lines removed from the end with their seal
 *   are found by the last seal kept in `<log>.chain`.
 * Lines written before issue 46 (no `prev`) at the start of the set are
 * counted as unchained legacy lines: reported, not a failure, and not
 * tamper-evident. The first chained line names the last of them.
 */
import { createReadStream, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createGunzip } from 'node:zlib';
import { HospitalApiError } from '../../errors/index.js';
import { verifyDetached } from '../../tls/cms-verify.js';
import { chainStatePath, lineHash, SEAL_INTERVAL_MS, sealStatement, type ChainStateFile } from './audit.js';

const PHASES = ['started', 'end', 'probe', 'seal'] as const;
type Phase = (typeof PHASES)[number];
/** Broken lines listed one by one; past this, only counted. */
const LISTED = 100;
/** How long past SEAL_INTERVAL_MS the newest lines may wait for their seal (a seal is signed and synced like a line). */
export const SEAL_GRACE_MS = 30_000;

export interface BrokenLine {
  /** 1-based, in its file. */
  line: number;
  reason: string;
}

export interface AuditFileReport {
  file: string;
  /** Lines in the file, a last line without its newline included. */
  lines: number;
  phases: Record<Phase, number>;
  /** Lines without `prev`, written before the chain (issue 46): not tamper-evident. */
  legacy: number;
  /** Seals whose signature and statement hold. */
  seals: number;
  broken: number;
  /** The first broken lines (at most 100), in file order. */
  brokenLines: BrokenLine[];
  ok: boolean;
}

export interface AuditChainReport {
  /** In chain order: rotated files first, the log itself last. */
  files: AuditFileReport[];
  ok: boolean;
  /** Whether seals were checked against a CA (without one, seals are not checked: a failure). */
  sealsChecked: boolean;
  /**
   * Newest lines that no seal covers because the install has no seal key
   * (AuditCheckOptions.sealKeyConfigured false): not tampering, and not a
   * failure, but lines removed from the end cannot be told. 0 otherwise.
   */
  unsealedNoKey: number;
}

export interface AuditCheckOptions {
  /** The install's CA (PEM): seals must be signed by a certificate it issued. */
  caPem?: string | null;
  /** `<log>.chain` of the newest file (read beside it when not given; null: none). */
  state?: ChainStateFile | null;
  /** Now, for the newest lines' seal deadline. */
  now?: number;
  /**
   * False: the install has no audit-seal key (tls/audit-seal.pem; a hospital CA
   * whose key install was not given), so its API writes no seals: the newest
   * lines without one are counted in unsealedNoKey, not reported as a missing
   * seal. Seals that are there are still checked. Default true.
   */
  sealKeyConfigured?: boolean;
}

/** One line as read: its number in its file, its hash, and the fields the chain needs. */
interface Line {
  n: number;
  hash: string;
  /** `undefined`: a legacy line (no field); a string or null otherwise. */
  prev: string | null | undefined;
  phase: Phase;
  time: number;
  seal?: { first: unknown; lines: unknown; head: unknown; cms: unknown };
}

/** Why `text` (one line, without its newline) is not an audit line, or null when it is one. */
function problem(value: unknown, text: string): string | null {
  if (value === undefined) return text.length === 0 ? 'empty line' : 'not JSON';
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'not a JSON object';
  const record = value as { phase?: unknown; time?: unknown; prev?: unknown };
  if (!PHASES.includes(record.phase as Phase)) return 'no phase started, end, probe or seal';
  if (typeof record.time !== 'string') return 'no time';
  if ('prev' in record && record.prev !== null && !(typeof record.prev === 'string' && /^[0-9a-f]{64}$/.test(record.prev))) return 'prev is not a SHA-256';
  return null;
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** `<log>` and its rotated files beside it, as logrotate names them (`.1`, `.2.gz`, `-20260101`), oldest first. */
export function auditLogFiles(log: string): string[] {
  const dir = dirname(log);
  const base = basename(log);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [log];
  }
  const rotated = names.filter((n) => n.startsWith(base) && /^(\.\d+|-\d{8,10})(\.gz)?$/.test(n.slice(base.length)));
  const key = (n: string): [number, string] => {
    const tail = n.slice(base.length).replace(/\.gz$/, '');
    // `.N`: the higher, the older; dates: the later, the newer
    return tail.startsWith('.') ? [0, String(1e9 - Number(tail.slice(1))).padStart(10, '0')] : [1, tail];
  };
  rotated.sort((a, b) => {
    const [ka, kb] = [key(a), key(b)];
    return ka[0] - kb[0] || ka[1].localeCompare(kb[1]);
  });
  return [...rotated.map((n) => join(dir, n)), log];
}

/** Every line of a file (gunzipped when it ends in .gz), `onLine(bytes with newline, unfinished)`. */
async function eachLine(file: string, onLine: (raw: Buffer, unfinished: boolean) => void): Promise<void> {
  let rest = Buffer.alloc(0);
  try {
    const stream = file.endsWith('.gz') ? createReadStream(file).pipe(createGunzip()) : createReadStream(file, { highWaterMark: 256 * 1024 });
    for await (const chunk of stream) {
      let buf = rest.length ? Buffer.concat([rest, chunk as Buffer]) : (chunk as Buffer);
      let from = 0;
      for (let nl = buf.indexOf(0x0a); nl >= 0; nl = buf.indexOf(0x0a, from)) {
        onLine(buf.subarray(from, nl + 1), false);
        from = nl + 1;
      }
      buf = buf.subarray(from);
      rest = Buffer.from(buf);
    }
  } catch (err) {
    throw new HospitalApiError('ERR_FILE_READ', { path: file, detail: (err as NodeJS.ErrnoException).code ?? 'read failed' }, { cause: err });
  }
  if (rest.length > 0) onLine(rest, true);
}

function readState(log: string): ChainStateFile | null {
  try {
    const value = JSON.parse(readFileSync(chainStatePath(log), 'utf8')) as ChainStateFile;
    return value?.v === 1 ? value : null;
  } catch {
    return null;
  }
}

/**
 * Checks the files, in chain order (auditLogFiles), as one chain.
 * @throws ERR_FILE_READ when a file cannot be read
 */
export async function checkAuditChain(files: string[], options: AuditCheckOptions = {}): Promise<AuditChainReport> {
  const caPem = options.caPem ?? null;
  const now = options.now ?? Date.now();
  const newest = files[files.length - 1] as string;
  const state = options.state === undefined ? readState(newest) : options.state;
  const reports: AuditFileReport[] = [];
  const read: Line[][] = [];
  /** Every line's hash, to tell a line out of order from one removed. */
  const where = new Map<string, { file: number; n: number }>();

  for (const [f, file] of files.entries()) {
    const report: AuditFileReport = { file, lines: 0, phases: { started: 0, end: 0, probe: 0, seal: 0 }, legacy: 0, seals: 0, broken: 0, brokenLines: [], ok: true };
    const lines: Line[] = [];
    await eachLine(file, (raw, unfinished) => {
      report.lines++;
      const text = raw.toString('utf8').replace(/\n$/, '');
      const value = unfinished ? undefined : parse(text);
      const why = unfinished ? 'unfinished last line (no newline)' : problem(value, text);
      if (why !== null) {
        note(report, report.lines, why);
        return;
      }
      const record = value as { phase: Phase; time: string; prev?: string | null; first?: unknown; lines?: unknown; head?: unknown; cms?: unknown };
      report.phases[record.phase]++;
      const line: Line = { n: report.lines, hash: lineHash(raw), prev: 'prev' in record ? (record.prev ?? null) : undefined, phase: record.phase, time: Date.parse(record.time) };
      if (record.phase === 'seal') line.seal = { first: record.first, lines: record.lines, head: record.head, cms: record.cms };
      if (!where.has(line.hash)) where.set(line.hash, { file: f, n: line.n });
      lines.push(line);
    });
    reports.push(report);
    read.push(lines);
  }

  // The chain, file after file: `last` is the hash of the line before, `chained` once a line with `prev` was seen.
  let last: string | null = null;
  let lastFile = -1;
  let chained = false;
  let unsealedNoKey = 0;
  const firsts: Array<string | null> = [];
  const counts: number[] = [];
  for (const [f, lines] of read.entries()) {
    const report = reports[f] as AuditFileReport;
    let first: string | null = null;
    let count = 0;
    /** Lines of this file whose seal is still to come (their first line number, and the time of the earliest). */
    let unsealedFrom: Line | null = null;
    /** A broken link waiting for the next seal to tell a removal from an edit. */
    let pending: { n: number } | null = null;
    for (const line of lines) {
      count = line.n;
      if (first === null) first = line.hash;
      if (line.prev === undefined) {
        if (chained) note(report, line.n, 'no prev: a line without its link among chained lines');
        else report.legacy++;
        last = line.hash;
        lastFile = f;
        continue;
      }
      // Nothing before it in the set (the first line of the oldest file): it may follow a file no longer kept.
      if (lastFile >= 0 && line.prev !== last) {
        const to = line.prev === null ? undefined : where.get(line.prev);
        if (to) note(report, line.n, `out of order, or a line inserted before it: it follows line ${to.n}${to.file === f ? '' : ` of ${basename(files[to.file] as string)}`}`);
        else if (line.prev === null) note(report, line.n, 'starts a new chain in the middle of the log (prev is null)');
        else if (line.n === 1) note(report, 1, `does not follow the last line of ${basename(files[lastFile] as string)} (lines removed from its end, or a file missing between them)`);
        else pending = { n: line.n };
      }
      chained = true;
      if (line.phase === 'seal') {
        const seal = line.seal!;
        const why = sealProblem(seal, caPem);
        if (why) {
          note(report, line.n, why);
        } else {
          const sealedLines = seal.lines as number;
          if (pending) {
            const removed = sealedLines - (line.n - 1);
            if (removed === 0) note(report, pending.n - 1, `edited (its hash is not the one line ${pending.n} names)`);
            else note(report, pending.n, `${Math.abs(removed)} line(s) ${removed > 0 ? 'removed' : 'added'} before this line (the seal at line ${line.n} counts ${sealedLines} before it)`);
            pending = null;
          } else if (sealedLines !== line.n - 1) {
            note(report, line.n, `${sealedLines > line.n - 1 ? `${sealedLines - (line.n - 1)} line(s) removed from the start of the file` : 'lines added at the start of the file'} (the seal counts ${sealedLines} before it)`);
          } else if (seal.first !== (line.n === 1 ? null : first) || seal.head !== line.prev) {
            note(report, line.n, 'the seal does not match the lines before it (the first line changed or was removed)');
          } else {
            report.seals++;
          }
          unsealedFrom = null;
        }
      } else {
        // A later seal covers every line before it through the chain: only the newest lines can lack one.
        unsealedFrom ??= line;
      }
      last = line.hash;
      lastFile = f;
    }
    if (pending) note(report, pending.n, `line ${pending.n - 1} edited, or lines removed before line ${pending.n} (no seal after it tells which)`);
    // The newest file: its last lines must be sealed within the interval (older files are sealed by the next one's seals, through the chain).
    if (f === read.length - 1) {
      if (unsealedFrom && options.sealKeyConfigured === false) unsealedNoKey = count - unsealedFrom.n + 1;
      else if (unsealedFrom && now - unsealedFrom.time > SEAL_INTERVAL_MS + SEAL_GRACE_MS) {
        note(report, unsealedFrom.n, `missing seal: lines ${unsealedFrom.n}–${count} are covered by no seal`);
      }
    }
    firsts.push(first);
    counts.push(count);
  }
  // The last seal kept beside the log (<log>.chain): the lines it covers must all still be here, in the file it names.
  if (state && state.first !== null) {
    const g = firsts.indexOf(state.first);
    const name = basename(chainStatePath(newest));
    if (g < 0) {
      note(reports[reports.length - 1] as AuditFileReport, 1, `the file of the last seal kept in ${name} is not here (its lines were removed, or the file replaced)`);
    } else {
      const report = reports[g] as AuditFileReport;
      const count = counts[g] as number;
      // The seal still here at another line: lines before it were removed or added, and the chain names where.
      const kept = (read[g] as Line[]).some((l) => l.hash === state.head);
      const span = (a: number, b: number): string => (a === b ? `line ${a}` : `lines ${a}–${b}`);
      if (!kept && count < state.lines) note(report, count + 1, `${span(count + 1, state.lines)} removed (the last seal, kept in ${name}, was line ${state.lines})`);
      else if (!kept) note(report, state.lines, `differs from the last seal kept in ${name}`);
    }
  }
  for (const r of reports) r.ok = r.broken === 0;
  // Chained lines prove nothing without their seals checked against the CA; legacy lines alone have no seal to check.
  return { files: reports, ok: (caPem !== null || !chained) && reports.every((r) => r.ok), sealsChecked: caPem !== null, unsealedNoKey };
}

/** Why a seal line is not a valid seal of the install's CA, or null. */
function sealProblem(seal: NonNullable<Line['seal']>, caPem: string | null): string | null {
  const { first, lines, head, cms } = seal;
  const hex = (v: unknown): boolean => v === null || (typeof v === 'string' && /^[0-9a-f]{64}$/.test(v));
  if (!hex(first) || !hex(head) || !Number.isSafeInteger(lines) || (lines as number) < 0 || typeof cms !== 'string') return 'a seal without its statement or signature';
  if (caPem === null) return null;
  const pem = `-----BEGIN PKCS7-----\n${(cms.match(/.{1,64}/g) ?? []).join('\n')}\n-----END PKCS7-----\n`;
  const check = verifyDetached(Buffer.from(sealStatement(first as string | null, lines as number, head as string | null)), pem, caPem, 'audit-seal');
  return check.ok ? null : `foreign or altered seal: ${check.reason}`;
}

function note(report: AuditFileReport, line: number, reason: string): void {
  report.broken++;
  if (report.brokenLines.length < LISTED) report.brokenLines.push({ line, reason });
  report.brokenLines.sort((a, b) => a.line - b.line);
}

/** One file on its own, its seals not checked against a CA (the line format only, as before issue 46). */
export async function checkAuditFile(file: string, options: AuditCheckOptions = {}): Promise<AuditFileReport> {
  return (await checkAuditChain([file], { state: null, ...options })).files[0] as AuditFileReport;
}

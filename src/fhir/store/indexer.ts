/**
 * Writes and clears a resource's index rows and Patient-compartment rows with
 * prepared statements (one INSERT per row inside the caller's transaction:
 * measured here at ~8,900 res/s for this pattern on better-sqlite3, see docs/fhir.md).
 * A parameter whose rows include another's (ParamDef.shares: `patient` and `subject`, `combo-code` and `code`)
 * gets no row the other one holds already (issue 28); search/param-rows.ts reads them back together.
 */
import { HospitalApiError } from '../../errors/index.js';
import { columnGet, columnStatement, type Database, type Statement } from './sqlite.js';
import { extractIndex } from './index-rows.js';
import { compartmentParams } from './compartment.js';
import { paramDef } from '../definitions/search-params.js';

/**
 * The most index rows one resource may have (issue 45): each is an INSERT inside the write's transaction, so
 * this bounds how long one resource holds the write lock (20,000 rows: tens of ms here). HL7's R4 example set
 * needs at most 7,413 (ValueSet in Bundle-valueset-expansions.json); 100,000 `Patient.name.given` make 200,000.
 */
export const MAX_INDEX_ROWS = 20_000;

/** One row (its parameter code, then its values) as a key: equal keys for equal rows. */
const rowKey = (code: string, row: readonly unknown[]): string => JSON.stringify([code, ...row.slice(1)]);

/**
 * A test of whether a row (its parameter code, then its values) is held by a parameter whose rows it shares
 * (ParamDef.shares): the same values under that parameter's code among `all`, this resource's rows of the same
 * kind, and, for a narrowed reference, the target type it narrows to (a reference row's first value).
 * The rows are looked up in a set built once: a scan of `all` for every row was quadratic, 100,000
 * `Patient.name.given` (400 KB) held the server for minutes (issue 45: `name` shares `given`'s rows).
 */
function heldBy(type: string, all: ReadonlyArray<readonly unknown[]>): (row: readonly unknown[]) => boolean {
  let keys: Set<string> | undefined;
  return (row) => {
    const shares = paramDef(type, row[0] as string)?.shares;
    if (!shares) return false;
    keys ??= new Set(all.map((r) => rowKey(r[0] as string, r)));
    return shares.some((s) => (s.targetType === undefined || row[1] === s.targetType) && keys!.has(rowKey(s.code, row)));
  };
}

export class Indexer {
  private readonly pids = new Map<string, Map<string, number>>();
  private readonly insPid: Statement;
  private readonly getPid: Statement;
  private readonly ins: Record<'token' | 'string' | 'ref' | 'date' | 'number' | 'compartment', Statement>;
  private readonly del: Record<'token' | 'string' | 'ref' | 'date' | 'number' | 'compartment', Statement>;

  constructor(private readonly db: Database) {
    this.insPid = db.prepare('INSERT OR IGNORE INTO param (type, code) VALUES (?, ?)');
    this.getPid = columnStatement(db, 'SELECT pid FROM param WHERE type = ? AND code = ?');
    this.ins = {
      token: db.prepare('INSERT OR IGNORE INTO sp_token (pid, value, system, rid) VALUES (?, ?, ?, ?)'),
      string: db.prepare('INSERT OR IGNORE INTO sp_string (pid, value, rid) VALUES (?, ?, ?)'),
      ref: db.prepare('INSERT OR IGNORE INTO sp_ref (pid, target_id, target_type, rid) VALUES (?, ?, ?, ?)'),
      date: db.prepare('INSERT OR IGNORE INTO sp_date (pid, lo, hi, rid) VALUES (?, ?, ?, ?)'),
      number: db.prepare('INSERT OR IGNORE INTO sp_number (pid, value, rid) VALUES (?, ?, ?)'),
      compartment: db.prepare('INSERT OR IGNORE INTO compartment (patient_id, rid) VALUES (?, ?)'),
    };
    this.del = {
      token: db.prepare('DELETE FROM sp_token WHERE pid = ? AND value = ? AND system = ? AND rid = ?'),
      string: db.prepare('DELETE FROM sp_string WHERE pid = ? AND value = ? AND rid = ?'),
      ref: db.prepare('DELETE FROM sp_ref WHERE pid = ? AND target_id = ? AND target_type = ? AND rid = ?'),
      date: db.prepare('DELETE FROM sp_date WHERE pid = ? AND lo = ? AND hi = ? AND rid = ?'),
      number: db.prepare('DELETE FROM sp_number WHERE pid = ? AND value = ? AND rid = ?'),
      compartment: db.prepare('DELETE FROM compartment WHERE patient_id = ? AND rid = ?'),
    };
  }

  /** The id of (type, code), created on first use; `lookupOnly` returns undefined instead of creating. */
  pid(type: string, code: string, lookupOnly = false): number | undefined {
    let byCode = this.pids.get(type);
    if (!byCode) this.pids.set(type, (byCode = new Map()));
    let pid = byCode.get(code);
    if (pid !== undefined) return pid;
    pid = columnGet<number>(this.getPid, type, code);
    if (pid === undefined) {
      if (lookupOnly) return undefined;
      this.insPid.run(type, code);
      pid = columnGet<number>(this.getPid, type, code) as number;
    }
    byCode.set(code, pid);
    return pid;
  }

  /**
   * Removes the rows `index(rid, old)` wrote, found by extracting them again from the old version. Never
   * refused: a resource stored before MAX_INDEX_ROWS existed can still be updated or deleted.
   */
  clear(rid: number, old: Record<string, unknown>): void {
    this.apply(rid, old, this.del, Infinity);
  }

  /** @throws ERR_FHIR_TOO_COMPLEX past MAX_INDEX_ROWS, before any row is written (the caller's transaction rolls back) */
  index(rid: number, resource: Record<string, unknown>): void {
    this.apply(rid, resource, this.ins, MAX_INDEX_ROWS);
  }

  private apply(rid: number, resource: Record<string, unknown>, s: Indexer['ins'], maxRows: number): void {
    const type = resource.resourceType as string;
    const rows = extractIndex(resource);
    const count = rows.token.length + rows.string.length + rows.reference.length + rows.date.length + rows.number.length;
    if (count > maxRows) {
      throw new HospitalApiError('ERR_FHIR_TOO_COMPLEX', { detail: `${type} would have ${count} search index rows; at most ${maxRows} are accepted per resource` });
    }
    const held = {
      token: heldBy(type, rows.token),
      string: heldBy(type, rows.string),
      reference: heldBy(type, rows.reference),
      date: heldBy(type, rows.date),
      number: heldBy(type, rows.number),
    };
    // INSERT OR IGNORE: the primary key already makes duplicate values one row. A row another parameter holds
    // for this one (ParamDef.shares) is not written again.
    for (const row of rows.token) if (!held.token(row)) s.token.run(this.pid(type, row[0])!, row[2], row[1] ?? '', rid);
    for (const row of rows.string) if (!held.string(row)) s.string.run(this.pid(type, row[0])!, row[1], rid);
    for (const row of rows.reference) if (!held.reference(row)) s.ref.run(this.pid(type, row[0])!, row[2], row[1], rid);
    for (const row of rows.date) if (!held.date(row)) s.date.run(this.pid(type, row[0])!, row[1], row[2], rid);
    for (const row of rows.number) if (!held.number(row)) s.number.run(this.pid(type, row[0])!, row[1], rid);
    // Membership follows the unmodified HL7 R4 Patient CompartmentDefinition (http://hl7.org/fhir/R4/compartmentdefinition-patient.html)
    if (type === 'Patient') s.compartment.run(resource.id as string, rid);
    const params = compartmentParams(type);
    if (params) {
      for (const [code, targetType, id] of rows.reference) {
        if (targetType === 'Patient' && params.has(code)) s.compartment.run(id, rid);
      }
    }
  }
}

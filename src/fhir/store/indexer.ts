/**
 * Writes and clears a resource's index rows and Patient-compartment rows with
 * prepared statements (one INSERT per row inside the caller's transaction:
 * measured here at ~8,900 res/s for this pattern on better-sqlite3, see docs/fhir.md).
 * A parameter whose rows include another's (ParamDef.shares: `patient` and `subject`, `combo-code` and `code`)
 * gets no row the other one holds already (issue 28); search/param-rows.ts reads them back together.
 */
import { columnGet, columnStatement, type Database, type Statement } from './sqlite.js';
import { extractIndex } from './index-rows.js';
import { compartmentParams } from './compartment.js';
import { paramDef } from '../definitions/search-params.js';

/**
 * Whether `row` (its parameter code, then its values) is held by a parameter whose rows this one shares
 * (ParamDef.shares): the same values under that parameter's code in this resource's rows of the same kind, and,
 * for a narrowed reference, the target type it narrows to (a reference row's first value).
 */
function held(type: string, row: readonly unknown[], all: ReadonlyArray<readonly unknown[]>): boolean {
  const shares = paramDef(type, row[0] as string)?.shares;
  if (!shares) return false;
  return shares.some(
    (s) => (s.targetType === undefined || row[1] === s.targetType) && all.some((r) => r[0] === s.code && r.length === row.length && r.every((v, i) => i === 0 || v === row[i])),
  );
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

  /** Removes the rows `index(rid, old)` wrote, found by extracting them again from the old version. */
  clear(rid: number, old: Record<string, unknown>): void {
    this.apply(rid, old, this.del);
  }

  index(rid: number, resource: Record<string, unknown>): void {
    this.apply(rid, resource, this.ins);
  }

  private apply(rid: number, resource: Record<string, unknown>, s: Indexer['ins']): void {
    const type = resource.resourceType as string;
    const rows = extractIndex(resource);
    // INSERT OR IGNORE: the primary key already makes duplicate values one row. A row another parameter holds
    // for this one (ParamDef.shares) is not written again.
    for (const row of rows.token) if (!held(type, row, rows.token)) s.token.run(this.pid(type, row[0])!, row[2], row[1] ?? '', rid);
    for (const row of rows.string) if (!held(type, row, rows.string)) s.string.run(this.pid(type, row[0])!, row[1], rid);
    for (const row of rows.reference) if (!held(type, row, rows.reference)) s.ref.run(this.pid(type, row[0])!, row[2], row[1], rid);
    for (const row of rows.date) if (!held(type, row, rows.date)) s.date.run(this.pid(type, row[0])!, row[1], row[2], rid);
    for (const row of rows.number) if (!held(type, row, rows.number)) s.number.run(this.pid(type, row[0])!, row[1], rid);
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

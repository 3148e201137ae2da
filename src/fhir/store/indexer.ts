/**
 * Writes and clears a resource's index rows and Patient-compartment rows with
 * prepared statements (one INSERT per row inside the caller's transaction:
 * measured here at ~8,900 res/s for this pattern on better-sqlite3, see docs/fhir.md).
 * A reference parameter that narrows another (ParamDef.narrows) gets no row the other one holds already
 * (issue 28: ~1 index row fewer per clinical resource); search/param-rows.ts reads them back together.
 */
import { columnGet, columnStatement, type Database, type Statement } from './sqlite.js';
import { extractIndex } from './index-rows.js';
import { compartmentParams } from './compartment.js';
import { paramDef } from '../definitions/search-params.js';

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
    // INSERT OR IGNORE: the primary key already makes duplicate values one row
    for (const [code, system, value] of rows.token) s.token.run(this.pid(type, code)!, value, system ?? '', rid);
    for (const [code, value] of rows.string) s.string.run(this.pid(type, code)!, value, rid);
    const refs = rows.reference;
    for (const [code, t, id] of refs) {
      // a row the narrowed parameter holds already (ParamDef.narrows: `patient` = `subject` rows pointing at a Patient)
      const narrows = paramDef(type, code)?.narrows;
      if (narrows && t === narrows.targetType && refs.some(([c, t2, id2]) => c === narrows.code && t2 === t && id2 === id)) continue;
      s.ref.run(this.pid(type, code)!, id, t, rid);
    }
    for (const [code, lo, hi] of rows.date) s.date.run(this.pid(type, code)!, lo, hi, rid);
    for (const [code, value] of rows.number) s.number.run(this.pid(type, code)!, value, rid);
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

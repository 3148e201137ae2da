/**
 * Issue 15: an older FHIR store is migrated on open instead of refused (one transaction, never half
 * migrated), its indexes are rebuilt when the search definitions it was indexed with differ, and a store
 * written by a newer toolkit is refused with a coded error.
 */
import { openDatabase, pragmaValue, queryValue } from '../../../src/fhir/store/sqlite.js';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { search } from '../../../src/fhir/search/execute.js';
import { openFhirStore } from '../../../src/fhir/store/sqlite-store.js';
import { canOpenSchema, SCHEMA_VERSION } from '../../../src/fhir/store/schema.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

afterAll(() => removeTempDirs());

const S = 'urn:test:migrate';

/** A store with one Patient at version 3 and one Observation pointing at it. */
function seed(dir: string): { patientId: string } {
  const store = openFhirStore(dir);
  const p = store.create({ resourceType: 'Patient', identifier: [{ system: S, value: 'p' }] } as any).resource;
  store.update({ ...p, gender: 'female' } as any);
  store.update({ ...p, gender: 'male' } as any);
  store.create({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${p.id}` } } as any);
  store.close();
  return { patientId: p.id as string };
}

function found(dir: string, patientId: string): { identifier: number; subject: number; compartment: number; versions: string[] } {
  const store = openFhirStore(dir);
  try {
    return {
      identifier: search(store, { resourceType: 'Patient', params: [['identifier', `${S}|p`]] }).matches.length,
      subject: search(store, { resourceType: 'Observation', params: [['subject', `Patient/${patientId}`]] }).matches.length,
      compartment: store.compartmentPage(patientId, { limit: 10 }).resources.length,
      versions: store.history('Patient', patientId).map((h) => h.versionId),
    };
  } finally {
    store.close();
  }
}

describe('FHIR store schema migration', () => {
  it('says which versions it opens (for the upgrade preflight)', () => {
    expect([0, 1, 2, SCHEMA_VERSION].every(canOpenSchema)).toBe(true);
    expect([SCHEMA_VERSION + 1, -1, 1.5].some(canOpenSchema)).toBe(false);
  });

  it('a current store reopens as is', () => {
    const dir = tempDir('fhir-migrate-');
    const { patientId } = seed(dir);
    expect(found(dir, patientId)).toEqual({ identifier: 1, subject: 1, compartment: 2, versions: ['3', '2', '1'] });
  });

  it('version 2 (history also held the current version, v1 index tables) is migrated to the current version', () => {
    const dir = tempDir('fhir-migrate-');
    const { patientId } = seed(dir);
    const db = openDatabase(join(dir, 'fhir.sqlite'));
    // make it look like version 2: the current version duplicated in history, no index fingerprint
    db.exec('INSERT INTO history (rid, version, last_updated, deleted, content) SELECT rid, version, last_updated, deleted, content FROM resource');
    db.exec('DROP TABLE store_meta');
    db.exec('PRAGMA user_version = 2');
    db.close();
    expect(found(dir, patientId)).toEqual({ identifier: 1, subject: 1, compartment: 2, versions: ['3', '2', '1'] });
    const after = openDatabase(join(dir, 'fhir.sqlite'));
    expect(pragmaValue(after, 'user_version')).toBe(SCHEMA_VERSION);
    after.close();
  });

  it('version 1 (rowid index tables with a nullable system) gets new index tables, rebuilt from the resources', () => {
    const dir = tempDir('fhir-migrate-');
    const { patientId } = seed(dir);
    const db = openDatabase(join(dir, 'fhir.sqlite'));
    for (const t of ['sp_token', 'sp_string', 'sp_ref', 'sp_date', 'sp_number', 'compartment']) db.exec(`DROP TABLE ${t}`);
    db.exec('CREATE TABLE sp_token (pid INTEGER NOT NULL, value TEXT NOT NULL, system TEXT, rid INTEGER NOT NULL)');
    db.exec("INSERT INTO sp_token VALUES (1, 'stale', NULL, 1)");
    db.exec('DROP TABLE store_meta');
    db.exec('PRAGMA user_version = 1');
    db.close();
    expect(found(dir, patientId)).toEqual({ identifier: 1, subject: 1, compartment: 2, versions: ['3', '2', '1'] });
  });

  it('a version-3 store from before index fingerprints opens without a rebuild and gets one recorded', () => {
    const dir = tempDir('fhir-migrate-');
    const { patientId } = seed(dir);
    const db = openDatabase(join(dir, 'fhir.sqlite'));
    db.exec('DROP TABLE store_meta');
    db.close();
    expect(found(dir, patientId)).toEqual({ identifier: 1, subject: 1, compartment: 2, versions: ['3', '2', '1'] });
    const after = openDatabase(join(dir, 'fhir.sqlite'));
    expect(queryValue(after, "SELECT count(*) FROM store_meta WHERE key = 'index'")).toBe(1);
    after.close();
  });

  it('indexes built from other search definitions are rebuilt on open (one transaction)', () => {
    const dir = tempDir('fhir-migrate-');
    const { patientId } = seed(dir);
    const db = openDatabase(join(dir, 'fhir.sqlite'));
    db.exec('DELETE FROM sp_token; DELETE FROM sp_ref; DELETE FROM compartment');
    db.exec("UPDATE store_meta SET value = 'indexed-by-an-older-toolkit' WHERE key = 'index'");
    db.close();
    expect(found(dir, patientId)).toEqual({ identifier: 1, subject: 1, compartment: 2, versions: ['3', '2', '1'] });
  });

  it('a store written by a newer toolkit is refused with ERR_FHIR_STORE_VERSION and left untouched', () => {
    const dir = tempDir('fhir-migrate-');
    seed(dir);
    const db = openDatabase(join(dir, 'fhir.sqlite'));
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    let err: unknown;
    try {
      openFhirStore(dir);
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code).toBe('ERR_FHIR_STORE_VERSION');
    const again = openDatabase(join(dir, 'fhir.sqlite'));
    expect(pragmaValue(again, 'user_version')).toBe(SCHEMA_VERSION + 1);
    again.close();
  });
});

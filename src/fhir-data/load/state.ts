/**
 * The resume file of `fhir load`: which units of which files the server has
 * already accepted, for one target URL. Written atomically (write-temp-rename),
 * at most once a second and on exit, so a crash costs at most a second of
 * re-sent Bundles, which conditional creates make harmless.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { HospitalApiError } from '../../errors/index.js';
import { writeFileAtomic } from '../../util/atomic-write.js';

interface StateDoc {
  version: 1;
  url: string;
  /** absolute file path → completed unit indexes */
  done: Record<string, number[]>;
}

export class LoadState {
  private doc: StateDoc;
  private sets = new Map<string, Set<number>>();
  private dirty = false;
  private lastSave = 0;

  private constructor(readonly path: string, doc: StateDoc) {
    this.doc = doc;
    for (const [k, v] of Object.entries(doc.done)) this.sets.set(k, new Set(v));
  }

  /** @throws ERR_FHIR_LOAD_STATE when the file exists but is not a load state */
  static open(path: string, url: string): { state: LoadState; resumed: boolean; otherUrl?: string } {
    if (!existsSync(path)) return { state: new LoadState(path, { version: 1, url, done: {} }), resumed: false };
    let doc: StateDoc;
    try {
      doc = JSON.parse(readFileSync(path, 'utf8')) as StateDoc;
    } catch (err) {
      throw new HospitalApiError('ERR_FHIR_LOAD_STATE', { path, detail: (err as Error).message }, { cause: err });
    }
    if (doc?.version !== 1 || typeof doc.url !== 'string' || typeof doc.done !== 'object' || doc.done === null) {
      throw new HospitalApiError('ERR_FHIR_LOAD_STATE', { path, detail: 'not a fhir load state file' });
    }
    // A state for another server says nothing about this one: start over.
    if (doc.url !== url) return { state: new LoadState(path, { version: 1, url, done: {} }), resumed: false, otherUrl: doc.url };
    return { state: new LoadState(path, doc), resumed: Object.keys(doc.done).length > 0 };
  }

  isDone(file: string, index: number): boolean {
    return this.sets.get(file)?.has(index) === true;
  }

  markDone(file: string, index: number): void {
    let set = this.sets.get(file);
    if (!set) this.sets.set(file, (set = new Set()));
    set.add(index);
    this.dirty = true;
    if (Date.now() - this.lastSave > 1000) this.save();
  }

  save(): void {
    if (!this.dirty) return;
    this.doc.done = Object.fromEntries([...this.sets].map(([k, v]) => [k, [...v].sort((a, b) => a - b)]));
    writeFileAtomic(this.path, JSON.stringify(this.doc) + '\n');
    this.dirty = false;
    this.lastSave = Date.now();
  }

  /** After a complete load: nothing left to resume. */
  remove(): void {
    rmSync(this.path, { force: true });
  }
}

/**
 * What the Bundle thread runs (bundle-thread.ts): one transaction or batch Bundle, from its request
 * bytes to its response bytes, on a connection of the thread's own to the server's SQLite file. The
 * parse, the R4 validation, the writes, the COMMIT's sync to disk and the garbage they leave all
 * happen on this thread, none on the thread that answers other callers (issue 24). A large single
 * resource (a create or update whose body is as large as a Bundle sent here) runs here the same way,
 * through the same dispatch as on the main thread (issue 45: the Bundle rule applies to it too).
 */
import { lowerThisThread } from '../../util/thread-priority.js';
import { openDatabase, type Database } from '../store/sqlite.js';
import { SqliteFhirStore, type StoreOptions } from '../store/sqlite-store.js';
import { loadStructureDefinitions } from '../validation/validate.js';
import type { WritePolicy } from './context.js';
import { parseJsonBody } from './json-body.js';
import { errorOutcome } from './outcome.js';
import { processBundle } from './transaction.js';
import { dispatch } from './dispatch.js';
import type { FhirRequest } from './context.js';

export interface BundleJob {
  id: number;
  /** The request body as received. */
  body: Uint8Array;
  base: string;
  policy: WritePolicy;
  preferReturn?: string;
  maxDepth: number;
  /** The server store's newest write stamp (sqlite-store.ts peer()). */
  stamp: number;
  /** A transaction's time limit (FhirContext.deadline), counted on the wall clock both threads share. */
  deadline?: { at: number; ms: number };
  /** A single request whose body is `body` (a large create or update), instead of a Bundle posted to the base. */
  request?: Omit<FhirRequest, 'body'>;
}

export interface BundleDone {
  id: number;
  status: number;
  /** The response body (a transaction-response, batch-response or OperationOutcome). */
  raw: Uint8Array;
  /** The newest write stamp after the Bundle, for the server's store to adopt. */
  stamp: number;
  /** A single request's response headers. */
  location?: string;
  etag?: string;
  lastModified?: string;
}

/** The thread's store: says once per Bundle when the Bundle's first write transaction begins. */
class ThreadStore extends SqliteFhirStore {
  job: number | undefined;

  constructor(db: Database, options: StoreOptions, private readonly writing: (job: number) => void) {
    super(db, options);
  }

  #began(): void {
    if (this.job === undefined) return;
    this.writing(this.job);
    this.job = undefined;
  }

  override bulkTransaction<T>(fn: (store: SqliteFhirStore) => Promise<T>): Promise<T> {
    return super.bulkTransaction((own) => (this.#began(), fn(own)));
  }

  override transaction<T>(fn: () => T): T {
    if (!this.db.isTransaction) this.#began();
    return super.transaction(fn);
  }
}

/** The Bundle thread's nice value (the main thread keeps the process's, 0). */
export const BUNDLE_THREAD_NICE = 10;

let store: ThreadStore | undefined;

/**
 * Opens the thread's connection and, when writes are validated, the R4 StructureDefinitions.
 * `writing` is told when a Bundle's writes begin (bundle-thread.ts onBundleThreadWriting).
 */
/** What the thread opens (bundle-thread.ts, at each start). */
export interface ThreadData {
  file: string;
  options: StoreOptions;
  validate: boolean;
}

export function openThread({ file, options, validate }: ThreadData, emit: (message: { id: number; writing: true }) => void): void {
  // a 20,000-entry Bundle is bulk work: on a busy machine the callers it would slow get the CPU first
  lowerThisThread(BUNDLE_THREAD_NICE);
  store = new ThreadStore(openDatabase(file), options, (id) => emit({ id, writing: true }));
  if (validate) loadStructureDefinitions();
}

export async function runJob(job: BundleJob): Promise<BundleDone> {
  if (!store) throw new Error('the Bundle thread has no store open');
  store.adoptStamp(job.stamp);
  store.job = job.id;
  let status: number;
  let raw: Buffer;
  let headers: Pick<BundleDone, 'location' | 'etag' | 'lastModified'> = {};
  try {
    const body = await parseJsonBody(Buffer.from(job.body.buffer, job.body.byteOffset, job.body.byteLength), job.maxDepth);
    const ctx = { store, base: job.base, policy: job.policy, ...(job.deadline ? { deadline: job.deadline } : {}) };
    const res = job.request ? dispatch(ctx, { ...job.request, body }) : await processBundle(ctx, body, job.preferReturn);
    status = res.status;
    raw = res.raw ?? Buffer.from(res.body === undefined ? '' : JSON.stringify(res.body));
    headers = { ...(res.location ? { location: res.location } : {}), ...(res.etag ? { etag: res.etag } : {}), ...(res.lastModified ? { lastModified: res.lastModified } : {}) };
  } catch (err) {
    const [code, oo] = errorOutcome(err);
    status = code;
    raw = Buffer.from(JSON.stringify(oo));
  }
  return { id: job.id, status, raw, stamp: store.peer().stamp, ...headers };
}

export function closeThread(): void {
  store?.close();
  store = undefined;
}

/**
 * The FHIR side of POST /api/patients: patient lookup by identifier and every
 * page of Patient/{id}/$everything, through the gateway's key-auth route.
 * Every request goes to FHIR_BASE_URL's origin only, verified against
 * FHIR_CA_FILE, with the `apikey` header (spec §5); the key is never logged.
 */
import { request, type Agent, type Dispatcher } from 'undici';
import { HospitalApiError } from '../../errors/index.js';
import { parseBundlePage } from './bundle-page.js';
import type { ApiConfig } from '../server/config.js';
import { fhirAccessOf, type FhirAccess } from './fhir-access.js';
import { identifierQuery, isUnderBase, rebaseNextLink, serverBaseFromSelf } from './fhir-url.js';
import { KeySet } from './key-set.js';
import { PageBuffers, PagePool, type PooledPage } from './page-buffers.js';
import { scanPage, type ScannedPage } from './page-scan.js';
import { BodyTooLargeError, classifyFailure, deadline, discard, makeAgent, readBytes } from './upstream-http.js';

/** FHIR id grammar (R4 datatypes: [A-Za-z0-9\-\.]{1,64}). */
const FHIR_ID = /^[A-Za-z0-9.-]{1,64}$/;

export interface EverythingStats {
  pages: number;
  resources: number;
}

/** A Patient the search matched, and the identifier system that matched it. */
export interface PatientMatch {
  id: string;
  /**
   * PLATFORM_IDENTIFIER_SYSTEM; with any system allowed, the system of the
   * Patient's identifier whose value is the care id (null when the server's match names none).
   */
  system: string | null;
}

/**
 * Called once per page, in order, with the page's new (not yet seen) entries
 * as comma-separated JSON bytes and their count; awaited before the next page.
 * The bytes are valid only until the promise it returns settles: their buffer
 * is then reused for a later page of the record (page-buffers.ts).
 */
export type PageSink = (entries: Buffer, count: number) => Promise<void>;

const COMMA = 0x2c;

export interface FhirClient {
  /**
   * The Patients whose identifier matches (at most 2: enough to tell one from
   * many), searched as `identifier=<PLATFORM_IDENTIFIER_SYSTEM>|<care id>`.
   */
  findPatients(platformCareId: string): Promise<PatientMatch[]>;
  /** Streams every page of $everything to `sink`. @throws ERR_API_FHIR_*, ERR_API_RECORD_TOO_LARGE */
  everything(patientId: string, sink: PageSink, stats: EverythingStats): Promise<void>;
  /** Readiness: GET metadata through the gateway with the key, bounded by `timeoutMs` (default FHIR_TIMEOUT_MS). */
  ping(timeoutMs?: number): Promise<void>;
  /** The key and CA in use now (config's at first). */
  access(): FhirAccess;
  /**
   * Use `next` for every later request (FHIR_API_KEY and FHIR_CA_FILE reread on
   * SIGHUP, src/api/fhir/key-reload.ts). A new CA gets a new Agent, so new connections
   * verify against it; requests in flight finish on the old one, which then closes.
   * A key rotation or a CA change (`cert renew --renew-ca`) needs no restart.
   */
  useAccess(next: FhirAccess): void;
  close(): Promise<void>;
}

/** Connection-level failures that happen before any byte of an answer (undici's RetryHandler retries these for idempotent requests too). */
const CLOSED_BEFORE_ANSWER = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

function closedBeforeAnswer(err: unknown): boolean {
  let e = err as { code?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && CLOSED_BEFORE_ANSWER.has(e.code)) return true;
    e = e.cause as typeof e;
  }
  return false;
}

export function createFhirClient(config: ApiConfig): FhirClient {
  // One reference, swapped whole: a request reads the key and the agent of the same access.
  let current: { access: FhirAccess; agent: Agent } = { access: fhirAccessOf(config), agent: makeAgent(config.fhirCa, config.fhirTimeoutMs) };
  const base = config.fhirBaseUrl;
  /** Page buffers records hand on to later records (page-buffers.ts). */
  const pages = new PagePool();
  const headers = {
    accept: 'application/fhir+json',
    // HAPI reuses cached searches for 60 s unless told not to (reuseCachedSearchResultsForMillis, HAPI server_jpa/configuration.md).
    'cache-control': 'no-cache',
  };

  async function getBytes(url: URL, ms = config.fhirTimeoutMs): Promise<Buffer> {
    return get(url, ms, (body) => readBytes(body, config.fhirMaxPageBytes));
  }

  async function get<T>(url: URL, ms: number, read: (body: Dispatcher.ResponseData['body']) => Promise<T>): Promise<T> {
    // Last line of defence: the key never leaves for another origin or path.
    if (!isUnderBase(url, base)) throw new HospitalApiError('ERR_API_FHIR_FOREIGN_LINK', { origin: url.origin });
    // One deadline for the request, its one retry and its body.
    const { signal, clear } = deadline(ms);
    try {
      const send = () => {
        // Read per request: `consumer rotate-key` swaps the access on SIGHUP (src/api/fhir/key-reload.ts).
        const { access, agent } = current;
        return request(url, { dispatcher: agent, method: 'GET', headers: { ...headers, apikey: access.key }, signal });
      };
      const res = await send().catch((err: unknown) => {
        // A kept-alive connection closed by the gateway as our request went out (a gateway task replaced
        // by a rolling update, a restart) fails before any answer: a GET is idempotent (RFC 9110 §9.2.2),
        // so it is sent once more, on a new connection, within the same deadline (issue 48).
        if (signal.aborted || !closedBeforeAnswer(err)) throw err;
        return send();
      });
      if (res.statusCode !== 200) {
        await discard(res.body);
        // 410 Gone = an expired or unknown _getpages id (HAPI's PageMethodBinding.java).
        throw new HospitalApiError('ERR_API_FHIR_UNAVAILABLE', { detail: `${url.pathname} answered ${res.statusCode}` });
      }
      return await read(res.body);
    } catch (err) {
      if (err instanceof HospitalApiError) throw err;
      if (err instanceof BodyTooLargeError) {
        throw new HospitalApiError('ERR_API_RECORD_TOO_LARGE', { name: 'FHIR_MAX_PAGE_BYTES', limit: err.limit });
      }
      const f = classifyFailure(err);
      if (f.kind === 'timeout') throw new HospitalApiError('ERR_API_FHIR_TIMEOUT', { ms }, { cause: err });
      if (f.kind === 'tls') throw new HospitalApiError('ERR_API_FHIR_TLS', { detail: f.reason }, { cause: err });
      throw new HospitalApiError('ERR_API_FHIR_UNAVAILABLE', { detail: f.reason }, { cause: err });
    } finally {
      clear();
    }
  }

  function endpoint(path: string, query: string): URL {
    const u = new URL(base.href);
    u.pathname = `${base.pathname.replace(/\/+$/, '')}${path}`;
    u.search = query;
    return u;
  }

  return {
    async findPatients(platformCareId) {
      const matches = new Map<string, PatientMatch>();
      // http://hl7.org/fhir/R4/search.html#token: `system|value` matches only that system's identifier.
      let url: URL | null = endpoint('/Patient', `${identifierQuery(platformCareId, config.identifierSystem)}&_count=2`);
      let serverBase: URL | null = null;
      // Follow next links too: HAPI can send an empty first page (hapifhir/hapi-fhir#5198).
      for (let page = 0; url && page < config.maxPages && matches.size < 2; page++) {
        const p = parseBundlePage((await getBytes(url)).toString('utf8'));
        serverBase ??= serverBaseFromSelf(p.self);
        for (const e of p.entries) {
          if (e.resourceType === 'Patient' && e.id && e.mode !== 'include' && e.mode !== 'outcome' && !matches.has(e.id)) {
            const system = config.identifierSystem ?? e.identifiers.find((i) => i.value === platformCareId)?.system ?? null;
            matches.set(e.id, { id: e.id, system });
          }
        }
        url = p.next ? rebaseNextLink(p.next, base, serverBase) : null;
      }
      const list = [...matches.values()];
      for (const { id } of list) {
        // `.`/`..` would be resolved as path segments by the URL parser.
        if (!FHIR_ID.test(id) || /^\.+$/.test(id)) throw new HospitalApiError('ERR_API_FHIR_BAD_RESPONSE', { detail: 'invalid Patient id' });
      }
      return list;
    },

    async everything(patientId, sink, stats) {
      const seen = new KeySet();
      const buffers = new PageBuffers(pages);
      let serverBase: URL | null = null;
      type Fetched = { page: ScannedPage; pooled: PooledPage };
      const fetchPage = async (url: URL): Promise<Fetched> => {
        const pooled = await get(url, config.fhirTimeoutMs, (body) => buffers.read(body, config.fhirMaxPageBytes));
        return { page: scanPage(pooled.bytes), pooled };
      };
      let pending: Promise<Fetched> | null = fetchPage(endpoint(`/Patient/${patientId}/$everything`, `_count=${config.fhirPageSize}`));
      while (pending) {
        const { page: p, pooled }: Fetched = await pending;
        stats.pages++;
        serverBase ??= serverBaseFromSelf(p.self);
        const next: URL | null = p.next ? rebaseNextLink(p.next, base, serverBase) : null;
        if (next && stats.pages >= config.maxPages) {
          throw new HospitalApiError('ERR_API_RECORD_TOO_LARGE', { name: 'MAX_PAGES', limit: config.maxPages });
        }
        // HAPI repeats included resources across pages (hapifhir/hapi-fhir#674); keep the first copy.
        const fresh = freshEntries(p, seen);
        if (stats.resources + fresh.length > config.maxResources) {
          throw new HospitalApiError('ERR_API_RECORD_TOO_LARGE', { name: 'MAX_RESOURCES', limit: config.maxResources });
        }
        stats.resources += fresh.length;
        // Fetch the next page while this one is written out: at most two pages in memory.
        pending = next ? fetchPage(next) : null;
        pending?.catch(() => undefined); // handled when awaited; avoids an unhandled rejection if sink throws
        // Unchanged pages go out as one zero-copy slice of the page; otherwise the kept entries are re-joined.
        const bytes = fresh.length === p.count ? p.interior : joinEntries(p, fresh);
        await sink(bytes, fresh.length);
        pooled.release();
      }
      // Every page's bytes are in the socket (each sink settled): the buffers can serve the next record.
      buffers.finish();
    },

    async ping(timeoutMs = config.fhirTimeoutMs) {
      const bytes = await getBytes(endpoint('/metadata', ''), timeoutMs);
      let doc: { resourceType?: unknown };
      try {
        doc = JSON.parse(bytes.toString('utf8')) as typeof doc;
      } catch {
        throw new HospitalApiError('ERR_API_FHIR_BAD_RESPONSE', { detail: 'metadata is not JSON' });
      }
      if (doc?.resourceType !== 'CapabilityStatement') {
        throw new HospitalApiError('ERR_API_FHIR_BAD_RESPONSE', { detail: 'metadata is not a CapabilityStatement' });
      }
    },

    access: () => current.access,
    useAccess(next) {
      const old = current;
      current = { access: next, agent: next.ca === old.access.ca ? old.agent : makeAgent(next.ca, config.fhirTimeoutMs) };
      if (current.agent !== old.agent) void old.agent.close().catch(() => undefined);
    },
    close: () => current.agent.close(),
  };
}

/** Indexes of the page's entries not seen before (an entry without a key is always kept); their keys join `seen`. */
function freshEntries(p: ScannedPage, seen: KeySet): number[] {
  const fresh: number[] = [];
  for (let i = 0; i < p.count; i++) {
    const start = p.keys[2 * i] as number;
    let isNew: boolean;
    if (start >= 0) isNew = seen.add(p.bytes, start, p.keys[2 * i + 1] as number);
    else {
      const key = p.keyOf(i);
      isNew = key === null || seen.addText(key);
    }
    if (isNew) fresh.push(i);
  }
  return fresh;
}

/** The kept entries of a page, comma-separated, in a buffer of their own. */
function joinEntries(p: ScannedPage, kept: number[]): Buffer {
  let size = Math.max(0, kept.length - 1);
  for (const i of kept) size += (p.bounds[2 * i + 1] as number) - (p.bounds[2 * i] as number);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  kept.forEach((i, n) => {
    if (n > 0) out[at++] = COMMA;
    at += p.bytes.copy(out, at, p.bounds[2 * i], p.bounds[2 * i + 1]);
  });
  return out;
}

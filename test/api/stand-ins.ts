/**
 * Stand-ins for the Hospital API's upstreams, as real servers on 127.0.0.1:
 * the platform's validate-access (HTTP or HTTPS) and a FHIR server over HTTPS
 * that pages like HAPI behind a gateway (PageMethodBinding, IServerAddressStrategy): internal next links
 * (`http://hapi:8080/fhir?_getpages=…`), included resources repeated across
 * pages, 410 for unknown page ids, and pages that fail on demand.
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttp, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KeyAndCert } from '../../src/tls/pki.js';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface StandIn {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

async function listen(server: Server, scheme: 'http' | 'https'): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closer(server: Server): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export interface PlatformReply {
  status: number;
  body?: unknown;
  delayMs?: number;
  /** Destroy the socket instead of answering. */
  reset?: boolean;
}

/** validate-access stand-in; `decide` sees the Authorization header and the request. */
export async function startPlatform(
  decide: (authorization: string | undefined, seen: Seen) => PlatformReply,
  tls?: KeyAndCert,
): Promise<StandIn> {
  const seen: Seen[] = [];
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: await readBody(req) };
    seen.push(entry);
    const r = decide(req.headers.authorization, entry);
    if (r.delayMs) await new Promise((resolve) => setTimeout(resolve, r.delayMs));
    if (r.reset) return void req.socket.destroy();
    const body = r.body === undefined ? '' : JSON.stringify(r.body);
    res.writeHead(r.status, body ? { 'content-type': 'application/json' } : {});
    res.end(body);
  };
  const server = tls ? createHttps({ key: tls.keyPem, cert: tls.certPem }, handler) : createHttp(handler);
  const url = await listen(server, tls ? 'https' : 'http');
  return { url, seen, close: closer(server) };
}

export interface FhirOptions {
  tls: KeyAndCert;
  apiKey: string;
  /** Mount path of the key-auth route, as on the gateway. */
  basePath?: string;
  /** identifier query value (URL-decoded, still FHIR-escaped) → Patient ids. */
  patients: Record<string, string[]>;
  /**
   * Patient id → its identifiers, matched as a FHIR server matches a token
   * (http://hl7.org/fhir/R4/search.html#token: `system|value`, `|value`, or `value` in any system);
   * when given, `patients` is not used.
   */
  identified?: Record<string, Array<{ system: string; value: string }>>;
  /** Patient id → entries of its $everything (Patient first). */
  records: Record<string, unknown[]>;
  /** Cap on entries per page whatever _count says (HAPI max_page_size). */
  maxPageSize?: number;
  /** Add this entry (an included Practitioner) to every page: HAPI repeats includes. */
  repeatedInclude?: unknown;
  /** 1-based page number that fails: 'status' answers 500, 'reset' cuts the socket mid-body. */
  failPage?: { page: number; mode: 'status' | 'reset' | 'gone' };
  /** Replaces the next link of page 1 with this URL. */
  foreignNext?: string;
  /** Next links use the internal HAPI address (default true). */
  internalLinks?: boolean;
  delayMs?: number;
  /** Awaited before answering each request: a test holds requests in flight until it opens the gate. */
  gate?: () => Promise<void>;
  /** Delay before answering this 1-based $everything page (a slow page mid-record). */
  pageDelay?: { page: number; ms: number };
}

const INTERNAL = 'http://hapi:8080/fhir';

export function bundle(entries: unknown[], self: string, next?: string): string {
  const link = [{ relation: 'self', url: self }];
  if (next) link.push({ relation: 'next', url: next });
  // "__RAW:1.50__" strings become bare JSON text, to send decimals JSON.stringify would rewrite.
  return JSON.stringify({ resourceType: 'Bundle', type: 'searchset', link, entry: entries }).replace(/"__RAW:([^"]*)__"/g, '$1');
}

/** Splits a token search value on its unescaped `|` and unescapes both parts (http://hl7.org/fhir/R4/search.html#escaping). */
function tokenParts(query: string): { system: string | null; value: string } {
  let system: string | null = null;
  let current = '';
  for (let i = 0; i < query.length; i++) {
    const c = query.charAt(i);
    if (c === '\\' && i + 1 < query.length) current += query.charAt(++i);
    else if (c === '|' && system === null) {
      system = current;
      current = '';
    } else current += c;
  }
  return { system, value: current };
}

function tokenMatches(identified: Record<string, Array<{ system: string; value: string }>>, query: string): string[] {
  const { system, value } = tokenParts(query);
  return Object.keys(identified).filter((id) =>
    (identified[id] ?? []).some((i) => i.value === value && (system === null || (system === '' ? !i.system : i.system === system))),
  );
}

/** A HAPI-like FHIR server behind a key-auth gateway, over HTTPS. */
export async function startFhirStandIn(opts: FhirOptions): Promise<StandIn & { options: FhirOptions }> {
  const seen: Seen[] = [];
  const basePath = opts.basePath ?? '/fhir-api-key-auth';
  const searches = new Map<string, { id: string; size: number }>();
  const server = createHttps({ key: opts.tls.keyPem, cert: opts.tls.certPem }, async (req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: await readBody(req) });
    if (opts.delayMs) await new Promise((resolve) => setTimeout(resolve, opts.delayMs));
    if (opts.gate) await opts.gate();
    const send = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'application/fhir+json' });
      res.end(body);
    };
    if (req.headers.apikey !== opts.apiKey) return send(401, '{"message":"No API key found in request"}');
    const u = new URL(req.url ?? '/', 'https://x');
    if (!u.pathname.startsWith(basePath)) return send(404, '{"message":"no Route matched"}');
    const path = u.pathname.slice(basePath.length);
    const selfBase = opts.internalLinks === false ? `https://${req.headers.host}${basePath}` : INTERNAL;
    if (path === '/metadata') return send(200, JSON.stringify({ resourceType: 'CapabilityStatement', status: 'active' }));
    if (path === '/Patient') {
      const query = u.searchParams.get('identifier') ?? '';
      const ids = opts.identified ? tokenMatches(opts.identified, query) : (opts.patients[query] ?? []);
      const resource = (id: string) => ({ resourceType: 'Patient', id, ...(opts.identified?.[id] ? { identifier: opts.identified[id] } : {}) });
      const entries = ids.map((id) => ({ fullUrl: `${INTERNAL}/Patient/${id}`, resource: resource(id), search: { mode: 'match' } }));
      return send(200, bundle(entries, `${selfBase}/Patient${u.search}`));
    }
    const ev = /^\/Patient\/([^/]+)\/\$everything$/.exec(path);
    let search: { id: string; size: number } | undefined;
    let offset = 0;
    if (ev) {
      const id = decodeURIComponent(ev[1] as string);
      if (!opts.records[id]) return send(404, '{"resourceType":"OperationOutcome"}');
      const size = Math.min(Number(u.searchParams.get('_count') ?? 20), opts.maxPageSize ?? Infinity);
      search = { id, size };
      const pageId = randomUUID();
      searches.set(pageId, search);
      u.searchParams.set('_getpages', pageId);
    } else if ((path === '' || path === '/') && u.searchParams.has('_getpages')) {
      search = searches.get(u.searchParams.get('_getpages') ?? '');
      // Unknown or expired _getpages ids answer 410 Gone (HAPI's PageMethodBinding.java).
      if (!search) return send(410, '{"resourceType":"OperationOutcome"}');
      offset = Number(u.searchParams.get('_getpagesoffset') ?? 0);
    } else {
      return send(404, '{"resourceType":"OperationOutcome"}');
    }
    const all = opts.records[search.id] as unknown[];
    const page = Math.floor(offset / search.size) + 1;
    if (opts.failPage?.page === page) {
      if (opts.failPage.mode === 'status') return send(500, '{"resourceType":"OperationOutcome"}');
      if (opts.failPage.mode === 'gone') return send(410, '{"resourceType":"OperationOutcome"}');
      res.writeHead(200, { 'content-type': 'application/fhir+json' });
      res.write('{"resourceType":"Bundle","entry":[');
      return void setTimeout(() => req.socket.destroy(), 20);
    }
    if (opts.pageDelay?.page === page) await new Promise((resolve) => setTimeout(resolve, opts.pageDelay?.ms));
    const slice = all.slice(offset, offset + search.size);
    if (opts.repeatedInclude) slice.push(opts.repeatedInclude);
    const pageId = u.searchParams.get('_getpages');
    let next: string | undefined;
    if (offset + search.size < all.length) {
      next = `${selfBase}?_getpages=${pageId}&_getpagesoffset=${offset + search.size}&_count=${search.size}&_pretty=true&_bundletype=searchset`;
    }
    if (page === 1 && opts.foreignNext) next = opts.foreignNext;
    const self = page === 1 ? `${selfBase}/Patient/${search.id}/$everything?_count=${search.size}` : `${selfBase}?_getpages=${pageId}`;
    send(200, bundle(slice, self, next));
  });
  const url = await listen(server, 'https');
  return { url: `${url}${basePath}`, seen, options: opts, close: closer(server) };
}

/** A record of `n` entries for patient `id`: the Patient then Observations of a realistic size (~450 bytes). */
export function makeRecord(id: string, n: number): unknown[] {
  const entries: unknown[] = [{ fullUrl: `${INTERNAL}/Patient/${id}`, resource: { resourceType: 'Patient', id }, search: { mode: 'match' } }];
  for (let i = 1; i < n; i++) {
    entries.push({
      fullUrl: `${INTERNAL}/Observation/${id}-o${i}`,
      resource: {
        resourceType: 'Observation',
        id: `${id}-o${i}`,
        status: 'final',
        code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }] },
        subject: { reference: `Patient/${id}` },
        effectiveDateTime: '2026-01-01T10:00:00+07:00',
        valueQuantity: { value: 60 + (i % 40), unit: 'beats/minute', system: 'http://unitsofmeasure.org', code: '/min' },
      },
      search: { mode: 'match' },
    });
  }
  return entries;
}

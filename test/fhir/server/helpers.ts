/** The FHIR server in-process on 127.0.0.1:0 with a temporary data dir, and a JSON client over undici. */
import { request } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import { startFhirServer, type FhirServerOptions, type RunningFhirServer } from '../../../src/fhir/server/start.js';
import { removeTempDirs, tempDir } from '../../helpers/tmp.js';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export type ServerOptions = Partial<Omit<FhirServerOptions, 'host' | 'port'>>;

export async function startServer(options: ServerOptions = {}): Promise<RunningFhirServer> {
  return startFhirServer({ ...options, host: '127.0.0.1', port: 0, dataDir: options.dataDir ?? tempDir('fhir-server-') });
}

export interface FhirServerFixture {
  /** The running server; throws if read before the file's beforeAll hooks have started it. */
  readonly server: RunningFhirServer;
  /** Its base URL (`server.url`). */
  readonly base: string;
}

/**
 * One server for the whole test file: started in a beforeAll, closed (and the file's temporary
 * directories removed) in an afterAll. beforeAll hooks run in the order they are declared, so a
 * file's own beforeAll declared after this call may use the server (e.g. to load data).
 */
export function useFhirServer(options: ServerOptions = {}): FhirServerFixture {
  let running: RunningFhirServer | undefined;
  beforeAll(async () => {
    running = await startServer(options);
  });
  afterAll(async () => {
    await running?.close();
    removeTempDirs();
  });
  const server = (): RunningFhirServer => {
    if (!running) throw new Error('useFhirServer: the server is not started yet (read it inside a hook or test)');
    return running;
  };
  return {
    get server() {
      return server();
    },
    get base() {
      return server().url;
    },
  };
}

/** `path` is relative to the base (`Patient?x=1`) or absolute (`http://…`). */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const url = /^https?:/.test(path) ? path : `${base}/${path}`;
  const res = await request(url, {
    method: method as 'GET',
    headers: {
      accept: 'application/fhir+json',
      ...(body !== undefined ? { 'content-type': 'application/fhir+json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** Follows `next` links to the end; returns every page. */
export async function allPages(base: string, first: string): Promise<any[]> {
  const pages: any[] = [];
  let url: string | undefined = first;
  while (url) {
    const r = await call(base, 'GET', url);
    if (r.status !== 200) throw new Error(`page ${pages.length}: ${r.status} ${JSON.stringify(r.body)}`);
    pages.push(r.body);
    url = r.body.link?.find((l: any) => l.relation === 'next')?.url;
    if (pages.length > 1000) throw new Error('paging does not end');
  }
  return pages;
}

export const ids = (bundle: any): string[] => (bundle.entry ?? []).map((e: any) => `${e.resource.resourceType}/${e.resource.id}`);

/** The FHIR server in-process on 127.0.0.1:0 with a temporary data dir, and a JSON client over undici. */
import { request } from 'undici';
import { startFhirServer, type FhirServerOptions, type RunningFhirServer } from '../../../src/fhir/server/start.js';
import { tempDir } from '../../helpers/tmp.js';

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export async function startServer(options: Partial<Omit<FhirServerOptions, 'host' | 'port'>> = {}): Promise<RunningFhirServer> {
  return startFhirServer({ ...options, host: '127.0.0.1', port: 0, dataDir: options.dataDir ?? tempDir('fhir-server-') });
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

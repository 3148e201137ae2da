/**
 * `GET|POST [base]/Patient/{id}/$everything` (fhir.md §1; R4 OperationDefinition
 * http://hl7.org/fhir/OperationDefinition/Patient-everything).
 *
 * For the server router (src/fhir/server): call `everythingOperation(ctx)` with
 *   ctx = { store, patientId, params, body?, publicBase }
 *   - params: the URL query (URLSearchParams or [name, value] pairs), GET and POST alike
 *   - body: the parsed POST body (a Parameters resource) or undefined
 *   - publicBase: the externally visible FHIR base, no trailing slash (e.g. https://gw:8443/fhir-api)
 * It resolves to a searchset Bundle (send it with status 200) or throws a
 * HospitalApiError (ERR_FHIR_RESOURCE_NOT_FOUND 404, ERR_FHIR_RESOURCE_GONE 410,
 * ERR_FHIR_EVERYTHING_BAD_PARAM / _BAD_CURSOR 400) for the OperationOutcome mapper.
 */
import { HospitalApiError } from '../../errors/index.js';
import type { FhirStore, Resource } from '../store/types.js';
import { everythingPage } from './collect.js';
import { decodeCursor, encodeCursor, fingerprint } from './cursor.js';
import { pairsFromParameters, parseEverythingParams, type EverythingParams, type ParamSource } from './params.js';

export interface EverythingContext {
  store: FhirStore;
  patientId: string;
  params: ParamSource;
  body?: unknown;
  publicBase: string;
}

export interface SearchsetBundle {
  resourceType: 'Bundle';
  type: 'searchset';
  meta: { lastUpdated: string };
  link: Array<{ relation: 'self' | 'next'; url: string }>;
  entry: Array<{ fullUrl: string; resource: Resource; search: { mode: 'match' | 'include' } }>;
}

const ID = /^[A-Za-z0-9\-.]{1,64}$/;

function link(base: string, patientId: string, echo: Array<[string, string]>, cursor?: string): string {
  const q = new URLSearchParams(echo);
  if (cursor) q.set('_cursor', cursor);
  const query = q.toString();
  return `${base}/Patient/${patientId}/$everything${query ? `?${query}` : ''}`;
}

/** Binds cursors to the patient and the filters, so a cursor cannot be replayed on another query. */
function filterPrint(patientId: string, p: EverythingParams): string {
  return fingerprint([patientId, p.types ?? null, p.sinceIso ?? null, p.start ?? null, p.end ?? null, p.count]);
}

export async function everythingOperation(ctx: EverythingContext): Promise<SearchsetBundle> {
  const { store, patientId } = ctx;
  if (!ID.test(patientId)) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type: 'Patient', id: patientId });
  const params = parseEverythingParams(ctx.params, pairsFromParameters(ctx.body));
  const current = store.read('Patient', patientId);
  if (!current) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type: 'Patient', id: patientId });
  if (current.deleted) throw new HospitalApiError('ERR_FHIR_RESOURCE_GONE', { type: 'Patient', id: patientId });
  const fp = filterPrint(patientId, params);
  const cursor = params.cursor ? decodeCursor(params.cursor, fp) : undefined;
  const now = new Date().toISOString();
  const page = everythingPage(store, patientId, params, cursor);
  const base = ctx.publicBase.replace(/\/+$/, '');
  const links: SearchsetBundle['link'] = [{ relation: 'self', url: link(base, patientId, params.echo, params.cursor) }];
  if (page.next) links.push({ relation: 'next', url: link(base, patientId, params.echo, encodeCursor(page.next, fp)) });
  return {
    resourceType: 'Bundle',
    type: 'searchset',
    // The response time: a client's next `_since` (fhir.md §1 says it should come from the server).
    meta: { lastUpdated: now },
    link: links,
    entry: page.entries.map(({ resource, mode }) => ({
      fullUrl: `${base}/${resource.resourceType}/${resource.id}`,
      resource,
      search: { mode },
    })),
  };
}

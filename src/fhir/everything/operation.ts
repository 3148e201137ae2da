/**
 * `GET|POST [base]/Patient/{id}/$everything` (http://hl7.org/fhir/R4/patient-operation-everything.html; R4 OperationDefinition
 * http://hl7.org/fhir/OperationDefinition/Patient-everything).
 *
 * `everythingHandler` is the thin handler the server's router table registers
 * (src/fhir/server/dispatch.ts, OPERATIONS); `everythingOperation(ctx)` is the worker, with
 *   ctx = { store, patientId, params, body?, publicBase }
 *   - params: the URL query (URLSearchParams or [name, value] pairs), GET and POST alike
 *   - body: the parsed POST body (a Parameters resource) or undefined
 *   - publicBase: the externally visible FHIR base, no trailing slash (e.g. https://gw:8443/fhir-api)
 * It returns a searchset Bundle (sent with status 200) or throws a
 * HospitalApiError (ERR_FHIR_RESOURCE_NOT_FOUND 404, ERR_FHIR_RESOURCE_GONE 410,
 * ERR_FHIR_EVERYTHING_BAD_PARAM / _BAD_CURSOR 400) for the OperationOutcome mapper.
 */
import { HospitalApiError } from '../../errors/index.js';
import type { FhirStore } from '../store/types.js';
import { everythingPage } from './collect.js';
import { decodeCursor, encodeCursor, fingerprint } from './cursor.js';
import { pageLink, searchsetBundle, type SearchsetBundle } from '../server/bundle.js';
import type { FhirContext, FhirRequest, FhirResponse } from '../server/context.js';
import { pairsFromParameters, parseEverythingParams, type EverythingParams, type ParamSource } from './params.js';

export interface EverythingContext {
  store: FhirStore;
  patientId: string;
  params: ParamSource;
  body?: unknown;
  publicBase: string;
}

const ID = /^[A-Za-z0-9\-.]{1,64}$/;

/** Binds cursors to the patient and the filters, so a cursor cannot be replayed on another query. */
function filterPrint(patientId: string, p: EverythingParams): string {
  return fingerprint([patientId, p.types ?? null, p.sinceIso ?? null, p.start ?? null, p.end ?? null]);
}

export function everythingOperation(ctx: EverythingContext): SearchsetBundle {
  const { store, patientId } = ctx;
  if (!ID.test(patientId)) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type: 'Patient', id: patientId });
  const params = parseEverythingParams(ctx.params, pairsFromParameters(ctx.body));
  const current = store.read('Patient', patientId);
  if (!current) throw new HospitalApiError('ERR_FHIR_RESOURCE_NOT_FOUND', { type: 'Patient', id: patientId });
  if (current.deleted) throw new HospitalApiError('ERR_FHIR_RESOURCE_GONE', { type: 'Patient', id: patientId });
  const fp = filterPrint(patientId, params);
  const cursor = params.cursor ? decodeCursor(params.cursor, fp) : undefined;
  const page = everythingPage(store, patientId, params, cursor);
  const base = ctx.publicBase.replace(/\/+$/, '');
  const path = `Patient/${patientId}/$everything`;
  return searchsetBundle({
    base,
    matches: page.entries.filter((e) => e.mode === 'match').map((e) => e.resource),
    included: page.entries.filter((e) => e.mode === 'include').map((e) => e.resource),
    selfUrl: pageLink(base, path, params.echo, params.cursor),
    nextUrl: page.next ? pageLink(base, path, params.echo, encodeCursor(page.next, fp)) : null,
  });
}

/** `Patient/[id]/$everything` as the router calls it: the request's id, query and body to the worker. */
export function everythingHandler(ctx: FhirContext, req: FhirRequest): FhirResponse {
  const body = everythingOperation({ store: ctx.store, patientId: req.segments[1] as string, params: req.params, body: req.body, publicBase: ctx.base });
  return { status: 200, body };
}

/**
 * Content negotiation (http://hl7.org/fhir/R4/http.html#mime-type): JSON only. `_format` overrides Accept; asking for
 * XML (or anything but JSON) → 406; a non-JSON request body → 415.
 */
import type { FastifyRequest } from 'fastify';
import { HospitalApiError } from '../../errors/index.js';

export const FHIR_JSON = 'application/fhir+json; charset=utf-8';
const JSON_FORMATS = new Set(['json', 'application/json', 'application/fhir+json', 'application/json+fhir']);

function mediaType(value: string): string {
  return value.split(';')[0]!.trim().toLowerCase();
}

export function checkAcceptable(request: FastifyRequest): void {
  const format = (request.query as Record<string, unknown> | undefined)?._format;
  if (typeof format === 'string' && format !== '') {
    if (!JSON_FORMATS.has(mediaType(format))) throw new HospitalApiError('ERR_FHIR_NOT_ACCEPTABLE', { format: format.slice(0, 60) });
    return;
  }
  const accept = request.headers.accept;
  if (!accept) return;
  const ranges = accept.split(',').map(mediaType);
  // JSON_FORMATS includes the legacy application/json+fhir (DSTU2), so it is accepted in Accept,
  // Content-Type and _format alike
  const ok = ranges.some((r) => r === '*/*' || r === 'application/*' || JSON_FORMATS.has(r) || r === 'text/html');
  if (!ok) throw new HospitalApiError('ERR_FHIR_NOT_ACCEPTABLE', { format: accept.slice(0, 60) });
}

import type { ErrorTable } from './types.js';

/**
 * Errors of the fhir-server area. Codes start with ERR_FHIR_ and are unique across all tables.
 * The FHIR server returns them as an OperationOutcome with the status below (fhir.md §3).
 */
export const fhirServerErrors = {
  ERR_FHIR_RESOURCE_NOT_FOUND: { message: '{type}/{id} is not known', status: 404, exit: 1 },
  ERR_FHIR_RESOURCE_GONE: { message: '{type}/{id} was deleted', status: 410, exit: 1 },
  ERR_FHIR_UNKNOWN_TYPE: { message: 'Unknown resource type "{type}"', status: 404, exit: 1 },
  ERR_FHIR_INVALID_RESOURCE: {
    message: 'Invalid resource: {detail}',
    status: 400,
    exit: 1,
    hint: 'Send a FHIR R4 JSON resource whose resourceType (and id, for an update) match the URL.',
  },
  ERR_FHIR_INVALID_REQUEST: { message: 'Invalid request: {detail}', status: 400, exit: 1 },
  ERR_FHIR_INVALID_SEARCH: {
    message: 'Invalid search parameter {name}: {detail}',
    status: 400,
    exit: 1,
    hint: 'Escape , | $ and \\ inside values with a backslash (FHIR R4 search §escaping).',
  },
  ERR_FHIR_VERSION_CONFLICT: {
    message: '{type}/{id} is at version {current}, not {expected}',
    status: 412,
    exit: 1,
    hint: 'Read the resource again and retry with its current ETag in If-Match.',
  },
  ERR_FHIR_MULTIPLE_MATCHES: {
    message: 'The conditional query "{query}" matched {count} resources',
    status: 412,
    exit: 1,
    hint: 'Make the condition selective enough to match at most one resource.',
  },
  ERR_FHIR_UNPROCESSABLE: { message: 'Unprocessable: {detail}', status: 422, exit: 1 },
  ERR_FHIR_NOT_ACCEPTABLE: {
    message: 'Only JSON is served (asked for {format})',
    status: 406,
    exit: 1,
    hint: 'Ask for application/fhir+json (Accept or _format=json).',
  },
  ERR_FHIR_UNSUPPORTED_MEDIA_TYPE: {
    message: 'Only JSON bodies are accepted (got {type})',
    status: 415,
    exit: 1,
    hint: 'Send Content-Type: application/fhir+json (or application/json-patch+json for PATCH).',
  },
  ERR_FHIR_METHOD_NOT_ALLOWED: { message: '{method} is not supported on {path}', status: 405, exit: 1 },
  ERR_FHIR_OPERATION_UNAVAILABLE: { message: 'Operation {operation} is not available: {detail}', status: 501, exit: 1 },
  ERR_FHIR_STORE_OPEN: {
    message: 'Cannot open the FHIR store in {path}: {detail}',
    status: 500,
    exit: 3,
    hint: 'Check that --data names a writable directory and that no other server uses it.',
  },
} satisfies ErrorTable;

import type { ErrorTable } from './types.js';

/**
 * Errors of the fhir-server area. Codes start with ERR_FHIR_ and are unique across all tables.
 * The FHIR server returns them as an OperationOutcome with the status below (http://hl7.org/fhir/R4/http.html, http://hl7.org/fhir/R4/operationoutcome.html).
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
  ERR_FHIR_NOT_SUPPORTED: {
    message: '{interaction} is not supported by this server',
    status: 501,
    exit: 1,
    hint: 'GET [base]/metadata lists every interaction and operation this server supports (docs/fhir.md).',
  },
  ERR_FHIR_RESOURCE_INVALID: {
    message: 'The resource does not conform to FHIR R4: {detail}',
    status: 400,
    exit: 1,
    hint: 'Each issue names the element path (FHIRPath) that failed against the R4 StructureDefinition.',
  },
  ERR_FHIR_FORBIDDEN_KEY: {
    message: 'The body has a key no FHIR element is named, at {path} (__proto__, constructor and prototype are refused)',
    status: 400,
    exit: 1,
    hint: 'Remove the key: R4 element names never take these forms, and the server stores nothing that carries one.',
  },
  ERR_FHIR_INVALID_ID: {
    message: '"{id}" is not a valid id',
    status: 400,
    exit: 1,
    hint: 'R4 ids are 1 to 64 of A-Z a-z 0-9 - and . (http://hl7.org/fhir/R4/datatypes.html#id); "." and ".." are refused too.',
  },
  ERR_FHIR_REFERENCE_NOT_FOUND: {
    message: 'Reference to a resource that does not exist: {detail}',
    status: 400,
    exit: 1,
    hint: 'Create the referenced resource first (or in the same transaction), or start the server with --no-referential-integrity for a bulk load in any order.',
  },
  ERR_FHIR_BODY_TOO_LARGE: {
    message: 'Request body is larger than {limit} bytes',
    status: 413,
    exit: 1,
    hint: 'Split the Bundle into smaller ones (hospital-api fhir --body-limit raises the limit).',
  },
  ERR_FHIR_TOO_COMPLEX: {
    message: 'Request too complex: {detail}',
    status: 400,
    exit: 1,
  },
  ERR_FHIR_METADATA_ONLY: {
    message: 'Only GET /fhir/metadata is served to {address}',
    status: 403,
    exit: 1,
    hint: "The full FHIR API answers the server's own user (and root) on loopback only: go through the gateway with a key. --open-api exposes it to the network (unauthenticated).",
  },
  ERR_FHIR_STORE_VERSION: {
    message: 'The FHIR store has schema version {version}, newer than this toolkit reads (up to {supported})',
    status: 500,
    exit: 3,
    hint: 'It was written by a newer hospital-api: run that version (or restore a backup taken before the upgrade).',
  },
  ERR_FHIR_TRANSACTION_TIMEOUT: {
    message: 'The transaction did not finish within {ms} ms; nothing was written',
    status: 503,
    exit: 1,
    hint: 'Send it again in smaller transactions.',
  },
  ERR_FHIR_BUNDLE_THREAD: {
    message: 'The thread running this Bundle stopped before it answered ({detail}); nothing of the Bundle was committed',
    status: 500,
    exit: 1,
    hint: 'Send the Bundle again; the FHIR server log names what stopped the thread.',
  },
  ERR_FHIR_STORE_OPEN: {
    message: 'Cannot open the FHIR store in {path}: {detail}',
    status: 500,
    exit: 3,
    hint: 'Check that --data names a writable directory and that no other server uses it.',
  },
} satisfies ErrorTable;

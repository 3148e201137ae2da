import type { ErrorTable } from './types.js';

/**
 * Errors of the api area (the Hospital API, `hospital-api serve`). Codes start
 * with ERR_API_. Statuses follow interface spec §7: 400 for a bad request,
 * incomplete credentials or denied access; 5xx for upstream failures.
 * Messages never carry the token or the API key.
 */
export const apiErrors = {
  ERR_API_BAD_REQUEST: {
    message: 'Bad request: {detail}',
    status: 400,
    exit: 1,
    hint: 'Send Content-Type: application/json with {"platformCareId": "...", "token": "..."}, both non-empty strings.',
  },
  ERR_API_BODY_TOO_LARGE: {
    message: 'Request body larger than {limit} bytes',
    status: 413,
    exit: 1,
  },
  ERR_API_NOT_FOUND: {
    message: 'No route {method} {path}',
    status: 404,
    exit: 1,
  },
  ERR_API_CALLER_FORBIDDEN: {
    message: 'Caller {caller} is not in ALLOWED_CALLERS',
    status: 403,
    exit: 1,
    hint: 'Add the caller address or its network to ALLOWED_CALLERS (and set TRUST_PROXY when behind a proxy).',
  },
  ERR_API_ACCESS_DENIED: {
    message: 'Access denied: {detail}',
    status: 400,
    exit: 1,
  },
  ERR_API_UPSTREAM_CREDENTIALS: {
    message: 'Incomplete upstream credentials: validate-access answered {status}',
    status: 400,
    exit: 1,
  },
  ERR_API_PLATFORM_UNAVAILABLE: {
    message: 'Platform validate-access failed: {detail}',
    status: 502,
    exit: 1,
    hint: 'Check PLATFORM_API_URL, PLATFORM_CA_FILE and that the platform is reachable.',
  },
  ERR_API_PLATFORM_TIMEOUT: {
    message: 'Platform validate-access did not answer within {ms} ms',
    status: 504,
    exit: 1,
  },
  ERR_API_FHIR_UNAVAILABLE: {
    message: 'FHIR request failed: {detail}',
    status: 502,
    exit: 1,
    hint: 'Check FHIR_BASE_URL, FHIR_API_KEY, FHIR_CA_FILE and that the gateway and FHIR server are up.',
  },
  ERR_API_FHIR_TIMEOUT: {
    message: 'FHIR server did not answer within {ms} ms',
    status: 504,
    exit: 1,
  },
  ERR_API_FHIR_TLS: {
    message: 'FHIR server certificate rejected: {detail}',
    status: 502,
    exit: 3,
    hint: 'FHIR_CA_FILE must hold the CA that issued the gateway certificate, and FHIR_BASE_URL must use a name the certificate covers.',
  },
  ERR_API_FHIR_BAD_RESPONSE: {
    message: 'FHIR server sent an unusable response: {detail}',
    status: 502,
    exit: 1,
  },
  ERR_API_FHIR_FOREIGN_LINK: {
    message: 'FHIR next link points outside FHIR_BASE_URL ({origin}); refused',
    status: 502,
    exit: 1,
    hint: 'Configure the FHIR server address (hapi.fhir.server_address) or the gateway so next links stay under FHIR_BASE_URL.',
  },
  ERR_API_RECORD_TOO_LARGE: {
    message: 'Patient record exceeds {name}={limit}',
    status: 502,
    exit: 1,
    hint: 'Raise {name} if the record is legitimately this large.',
  },
  ERR_API_ABORTED: {
    message: 'Response aborted mid-stream: {detail}',
    status: 502,
    exit: 1,
  },
  // Audit and metrics only (issue 45): nobody is left to read it. 499 is nginx's "client closed request"
  // (NGX_HTTP_CLIENT_CLOSED_REQUEST, src/http/ngx_http_request.h), logged when the client closes first.
  ERR_API_METRICS_UNAUTHORIZED: {
    message: 'GET /metrics needs the bearer token of METRICS_TOKEN_FILE',
    status: 401,
    exit: 1,
    hint: 'Send Authorization: Bearer <the file\'s token>; Prometheus: authorization.credentials_file in the scrape job (docs/operations.md "Monitoring").',
  },
  // Audit and metrics only: node:http answers the 408 itself (src/api/request/client-error.ts).
  ERR_API_REQUEST_TIMEOUT: {
    message: 'The request did not arrive in time: {detail}',
    status: 408,
    exit: 1,
  },
  ERR_API_CALLER_LEFT: {
    message: 'The caller closed the connection before it was answered: {detail}',
    status: 499,
    exit: 1,
  },
  ERR_API_IDENTIFIER_SYSTEM_MISSING: {
    message: "PLATFORM_IDENTIFIER_SYSTEM is not set: a care id would match any patient's identifier in any system (a hospital number, a national id)",
    status: 500,
    exit: 3,
    hint: "Name the platform's identifier system: {fix}. Only if the platform's care ids cannot collide with any other identifier, start serve with --any-identifier-system instead.",
  },
  ERR_API_AUDIT_UNAVAILABLE: {
    // No path: this message is an HTTP reply, and error bodies name no server path (the operator's stderr does).
    message: 'The audit log cannot be written ({detail}); no patient data is sent until it can',
    status: 503,
    exit: 1,
    hint: 'Free disk space or fix the permissions of AUDIT_LOG; the API recovers by itself on the next write that succeeds.',
  },
  ERR_API_AUDIT_UNVERIFIED: {
    // Names the file and how many lines broke, never a line's content (the log names patients).
    message: 'The audit log {path} does not pass audit verify ({detail}): no disclosure is read from a log that may have been altered',
    status: 500,
    exit: 1,
    hint: 'Run `hospital-api audit verify` on the same log to see which lines break its chain or lack a seal (docs/operations.md, "Checking a period").',
  },
  ERR_API_BUSY: {
    // {reason}: "the queue is full (API_QUEUE_LENGTH=n)" or "this request waited API_QUEUE_TIMEOUT_MS=ms without one".
    message: 'Too many patient requests: every slot is in use (MAX_CONCURRENT_REQUESTS={limit}) and {reason}; retry after the Retry-After delay',
    status: 503,
    exit: 1,
    hint: 'Retry after the Retry-After delay; if it persists, raise API_QUEUE_LENGTH or API_QUEUE_TIMEOUT_MS, or MAX_CONCURRENT_REQUESTS if the host has the memory for it.',
  },
  ERR_API_CLIENT_STALLED: {
    message: 'The caller did not read the response for {ms} ms; connection cut',
    status: 408,
    exit: 1,
  },
  ERR_API_NOT_READY: {
    message: 'Not ready: {detail}',
    status: 503,
    exit: 1,
  },
} satisfies ErrorTable;

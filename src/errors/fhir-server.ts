import type { ErrorTable } from './types.js';

/** Errors of the fhir-server area. Codes start with ERR_FHIR_ and are unique across all tables. */
export const fhirServerErrors = {} satisfies ErrorTable;

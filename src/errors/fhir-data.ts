import type { ErrorTable } from './types.js';

/** Errors of the fhir-data area. Codes start with ERR_FHIR_ and are unique across all tables. */
export const fhirDataErrors = {} satisfies ErrorTable;

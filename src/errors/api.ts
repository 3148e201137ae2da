import type { ErrorTable } from './types.js';

/** Errors of the api area. Codes start with ERR_API_. */
export const apiErrors = {} satisfies ErrorTable;

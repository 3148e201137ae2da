import type { ErrorTable } from './types.js';

/** Errors of the install area. Codes start with ERR_INSTALL_. */
export const installErrors = {} satisfies ErrorTable;

import type { ErrorTable } from './types.js';

/** Errors of the gateway-admin area. Codes start with ERR_GATEWAY_ and are unique across all tables. */
export const gatewayAdminErrors = {} satisfies ErrorTable;

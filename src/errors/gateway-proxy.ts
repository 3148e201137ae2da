import type { ErrorTable } from './types.js';

/** Errors of the gateway-proxy area. Codes start with ERR_PROXY_ and are unique across all tables. */
export const gatewayProxyErrors = {} satisfies ErrorTable;

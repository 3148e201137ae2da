import type { ErrorTable } from './types.js';

/**
 * Errors of the gateway-admin area (admin API, store, declarative config).
 * Admin API errors also carry Kong's wire body (kong/db/errors.lua); the
 * code here picks the HTTP status, the Kong body is built by src/gateway/model/kong-error.ts.
 */
export const gatewayAdminErrors = {
  ERR_GATEWAY_ADMIN_SCHEMA: { message: '{detail}', status: 400, exit: 1, hint: 'Correct the fields named in the error.' },
  ERR_GATEWAY_ADMIN_BAD_REQUEST: { message: '{detail}', status: 400, exit: 1 },
  ERR_GATEWAY_ADMIN_FOREIGN_KEY: {
    message: '{detail}',
    status: 400,
    exit: 1,
    hint: 'Refer to an existing entity, or remove the entities that still reference this one first.',
  },
  ERR_GATEWAY_ADMIN_NOT_FOUND: { message: 'Not found', status: 404, exit: 1 },
  ERR_GATEWAY_ADMIN_METHOD: { message: 'Method not allowed', status: 405, exit: 1 },
  ERR_GATEWAY_ADMIN_UNIQUE: { message: '{detail}', status: 409, exit: 1, hint: 'Use another value, or PUT to update the existing entity.' },
  ERR_GATEWAY_ADMIN_MEDIA_TYPE: {
    message: '{detail}',
    status: 415,
    exit: 1,
    hint: 'Send application/json, application/x-www-form-urlencoded or multipart/form-data, encoded as UTF-8.',
  },
  ERR_GATEWAY_DECLARATIVE_INVALID: {
    message: '{detail}',
    status: 400,
    exit: 1,
    hint: 'Fix the declarative configuration (_format_version "3.0") and load it again.',
  },
  ERR_GATEWAY_EXPORT_DISABLED_SERVICE: {
    message: 'Disabled services cannot be exported for decK: {services} (decK 1.4.0 has no "enabled" field, so they would come back enabled)',
    status: 400,
    exit: 1,
    hint: 'Export with --format kong (Kong\'s own form: keeps enabled: false and _transform: false; newer decK and Kong read it), or enable or delete the services first.',
  },
  ERR_GATEWAY_EXPORT_UNAVAILABLE: {
    message: 'The gateway of {dir} gave no configuration to export: GET /config answered {status}',
    status: 502,
    exit: 1,
    hint: 'Kong with a database serves GET /config only in DB-less mode: export with decK (`deck gateway dump`), or run `hospital-api gateway export --state <file>` where the state file is.',
  },
  ERR_GATEWAY_STATE_INVALID: {
    message: 'Gateway state file {path} is not valid: {detail}',
    status: 500,
    exit: 3,
    hint: 'Restore the file from a backup or an exported declarative config, or move it away to start empty.',
  },
} satisfies ErrorTable;

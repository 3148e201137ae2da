/**
 * The one error registry: every area's table, merged. A contract test checks
 * that codes are unique across areas and documented in docs/errors.md.
 */
import { coreErrors } from './core.js';
import { apiErrors } from './api.js';
import { gatewayAdminErrors } from './gateway-admin.js';
import { gatewayProxyErrors } from './gateway-proxy.js';
import { fhirServerErrors } from './fhir-server.js';
import { fhirDataErrors } from './fhir-data.js';
import { fhirDoorErrors } from './fhir-door.js';
import { installErrors } from './install.js';
import { runtimeErrors } from './runtime.js';
import { maintenanceErrors } from './maintenance.js';
import type { ErrorDefinition } from './types.js';

export const errorTables = {
  core: coreErrors,
  api: apiErrors,
  gatewayAdmin: gatewayAdminErrors,
  gatewayProxy: gatewayProxyErrors,
  fhirServer: fhirServerErrors,
  fhirData: fhirDataErrors,
  fhirDoor: fhirDoorErrors,
  install: installErrors,
  runtime: runtimeErrors,
  maintenance: maintenanceErrors,
} as const;

type Tables = typeof errorTables;
export type ErrorCode = { [K in keyof Tables]: keyof Tables[K] }[keyof Tables] & string;

export const registry: Readonly<Record<string, ErrorDefinition>> = Object.freeze(
  Object.assign({}, ...Object.values(errorTables)),
);

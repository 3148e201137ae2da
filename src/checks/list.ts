/** The acceptance checks in the order issue 5 lists them (spec §4.5 1-4, then the negative checks), then issue 23's. */
import { adminNotExposed } from './admin-not-exposed.js';
import { apiHealth } from './api-health.js';
import { basicAuthRequired } from './basic-auth-required.js';
import { certificateChain } from './certificate-chain.js';
import { certificateExpiry } from './certificate-expiry.js';
import { componentsUp } from './components-up.js';
import { fhirMetadata } from './fhir-metadata.js';
import { filePermissions } from './file-permissions.js';
import { fhirRoutesClosed } from './fhir-routes-closed.js';
import { gatewayDrift } from './gateway-drift.js';
import { gatewayNodes } from './gateway-nodes.js';
import { gatewayObjects } from './gateway-objects.js';
import { gatewayUndeclared } from './gateway-undeclared.js';
import { keyAuthMetadata } from './key-auth-metadata.js';
import { keyAuthNoKey } from './key-auth-no-key.js';
import { keyAuthWrongKey } from './key-auth-wrong-key.js';
import { tlsPolicy } from './tls-policy.js';
import type { Check } from './types.js';

export const CHECKS: readonly Check[] = Object.freeze([
  componentsUp,
  apiHealth,
  fhirMetadata,
  gatewayObjects,
  keyAuthMetadata,
  // issue 29: the same on every host that publishes the gateway
  gatewayNodes,
  keyAuthNoKey,
  keyAuthWrongKey,
  basicAuthRequired,
  adminNotExposed,
  certificateChain,
  certificateExpiry,
  filePermissions,
  // issue 23: the whole gateway, not its four named parts
  gatewayDrift,
  fhirRoutesClosed,
  gatewayUndeclared,
  tlsPolicy,
]);

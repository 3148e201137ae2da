/**
 * What the routes of the Hospital API share: the (immutable) configuration,
 * the upstream clients, the audit log and the metrics.
 * A file of its own so routes and the app both depend on it, never on each other.
 */
import type { AuditLog } from '../audit/audit.js';
import type { ApiConfig } from './config.js';
import type { FhirClient } from '../fhir/fhir-client.js';
import type { ApiMetrics } from './metrics.js';
import type { PlatformClient } from '../platform/platform-client.js';

export interface ApiContext {
  readonly config: ApiConfig;
  readonly platform: PlatformClient;
  readonly fhir: FhirClient;
  readonly audit: AuditLog;
  readonly metrics: ApiMetrics;
}

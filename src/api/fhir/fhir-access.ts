/**
 * What the API presents to and trusts of the gateway: FHIR_API_KEY and
 * FHIR_CA_FILE. Immutable: a key reload (SIGHUP, src/api/fhir/key-reload.ts) builds
 * a new one and the FHIR client swaps its single reference to it, so a request
 * sees either the old key and CA or the new ones, never a mix, and the
 * configuration itself never changes once the server runs.
 */
import type { ApiConfig } from '../server/config.js';

export interface FhirAccess {
  /** Sent as the `apikey` header, only to FHIR_BASE_URL. Never logged. */
  readonly key: string;
  /** PEM of FHIR_CA_FILE, or null for the system store. */
  readonly ca: string | null;
}

export function fhirAccessOf(config: Pick<ApiConfig, 'fhirApiKey' | 'fhirCa'>): FhirAccess {
  return Object.freeze({ key: config.fhirApiKey, ca: config.fhirCa });
}

/** Runtime component names (as native uses them, by role) → compose services of templates/compose.yaml. */
export const SERVICE_OF: Readonly<Record<'api' | 'gateway' | 'fhir', string>> = Object.freeze({
  api: 'hospital-api',
  gateway: 'kong',
  fhir: 'hapi',
});

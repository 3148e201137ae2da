/**
 * The generator's data model and identifier systems. Resources carry a
 * deterministic id and relative references (`Type/id`); the writers turn that
 * into transaction Bundles (urn:uuid) or NDJSON (ids kept).
 */
export type Resource = { resourceType: string; id: string; [key: string]: unknown };

/** The platform care id the Hospital API looks patients up by (`Patient?identifier=SYSTEM|value`). */
export const PLATFORM_CARE_ID_SYSTEM = 'urn:hospital-api:platform-care-id';
/** Hospital number (HN), the hospital's own medical record number. */
export const HN_SYSTEM = 'urn:hospital-api:hn';
/** National id (synthetic values, 13 digits). */
export const NATIONAL_ID_SYSTEM = 'urn:hospital-api:national-id';
/** Every generated resource carries one identifier in this system, so loads are conditional creates. */
export const SYNTHETIC_ID_SYSTEM = 'urn:hospital-api:synthetic-id';

/** One unit that must land in one transaction: a resource and what references it inside the patient. */
export interface Group {
  resources: Resource[];
}

export interface GeneratedPatient {
  patient: Resource;
  /** The platform care id value (for demos and tests). */
  careId: string;
  /** Clinical resources grouped so intra-group references resolve within one Bundle. */
  groups: Group[];
  /** Total resources of this patient, the Patient included. */
  size: number;
}

export interface Dataset {
  seed: string;
  /** Practitioner, Organization, Location, Medication shared by every patient. */
  shared: Resource[];
  patients: GeneratedPatient[];
}

export function ref(resource: Resource): { reference: string } {
  return { reference: `${resource.resourceType}/${resource.id}` };
}

export function syntheticId(id: string): Array<{ system: string; value: string }> {
  return [{ system: SYNTHETIC_ID_SYSTEM, value: id }];
}

/** The identifier a conditional create should match on: the first one. */
export function firstIdentifier(resource: Resource): { system?: string; value?: string } | undefined {
  const ids = resource.identifier;
  return Array.isArray(ids) ? (ids[0] as { system?: string; value?: string } | undefined) : undefined;
}

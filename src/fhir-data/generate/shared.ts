/**
 * Resources every patient points at and none belongs to (never in the Patient
 * compartment, http://hl7.org/fhir/R4/compartmentdefinition-patient.html): Organization, Location, Practitioner, Medication.
 * $everything must reach them through references.
 */
import { CITIES, FAMILY, GIVEN, MEDICATIONS, RXNORM, SNOMED, SPECIALTIES } from './catalog.js';
import { ref, syntheticId, type Resource } from './model.js';
import type { Rng } from './random.js';

export interface SharedPool {
  organizations: Resource[];
  locations: Resource[];
  practitioners: Resource[];
  medications: Resource[];
}

export function generateShared(rng: Rng): SharedPool {
  const organizations = ['General Hospital', 'Community Clinic', 'Central Laboratory'].map((name, i) => {
    const id = rng.uuid();
    return {
      resourceType: 'Organization',
      id,
      identifier: syntheticId(id),
      active: true,
      type: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/organization-type', code: i === 2 ? 'other' : 'prov' }] }],
      name: `${rng.pick(CITIES)} ${name}`,
    } satisfies Resource;
  });
  const locations = ['Emergency', 'Outpatient', 'Ward A', 'Ward B', 'Radiology', 'Pharmacy'].map((name) => {
    const id = rng.uuid();
    return {
      resourceType: 'Location',
      id,
      identifier: syntheticId(id),
      status: 'active',
      name,
      managingOrganization: ref(organizations[0] as Resource),
    } satisfies Resource;
  });
  const practitioners = Array.from({ length: 30 }, () => {
    const id = rng.uuid();
    const specialty = rng.pick(SPECIALTIES);
    return {
      resourceType: 'Practitioner',
      id,
      identifier: [...syntheticId(id), { system: 'urn:hospital-api:license', value: `MD${rng.digits(6)}` }],
      active: true,
      name: [{ family: rng.pick(FAMILY), given: [rng.pick(GIVEN)], prefix: ['Dr.'] }],
      qualification: [{ code: { coding: [{ system: SNOMED, code: specialty[0], display: specialty[1] }] } }],
    } satisfies Resource;
  });
  const medications = MEDICATIONS.map(([code, display]) => {
    const id = rng.uuid();
    return {
      resourceType: 'Medication',
      id,
      identifier: syntheticId(id),
      code: { coding: [{ system: RXNORM, code, display }], text: display },
      status: 'active',
    } satisfies Resource;
  });
  return { organizations, locations, practitioners, medications };
}

export function sharedList(pool: SharedPool): Resource[] {
  return [...pool.organizations, ...pool.locations, ...pool.practitioners, ...pool.medications];
}

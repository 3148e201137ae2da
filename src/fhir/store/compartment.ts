/**
 * The Patient compartment: which search parameters of which resource types put a
 * resource in a patient's compartment. The table is the HL7 R4 CompartmentDefinition
 * copied unmodified from profiles-resources.json (http://hl7.org/fhir/R4/compartmentdefinition-patient.html; Medplum's own
 * compartmentdefinition-patient.json is edited, e.g. Encounter uses `subject` there);
 * test/fhir/server/compartment.test.ts checks the copy against the source.
 */
import { readFileSync } from 'node:fs';

const definition = JSON.parse(readFileSync(new URL('./patient-compartment.json', import.meta.url), 'utf8')) as {
  resource: Array<{ code: string; param: string[] }>;
};

const byType = new Map<string, Set<string>>(definition.resource.map((r) => [r.code, new Set(r.param)]));

/** The compartment parameters of a resource type, or undefined when the type is never in the compartment. */
export function compartmentParams(type: string): ReadonlySet<string> | undefined {
  return byType.get(type);
}

/**
 * `start`/`end` of $everything are care dates, not record dates (http://hl7.org/fhir/R4/patient-operation-everything.html).
 * Each type's clinical date element; a resource without one is kept.
 */
import { dateRange } from '../definitions/dates.js';

type Obj = Record<string, unknown>;

/** Element names, tried in order; `X[x]` choices are listed by their concrete names. */
const CARE_DATE: Record<string, string[]> = {
  AllergyIntolerance: ['onsetDateTime', 'onsetPeriod', 'recordedDate'],
  CarePlan: ['period'],
  CareTeam: ['period'],
  ClinicalImpression: ['effectiveDateTime', 'effectivePeriod', 'date'],
  Communication: ['sent'],
  Composition: ['date'],
  Condition: ['onsetDateTime', 'onsetPeriod', 'recordedDate'],
  DetectedIssue: ['identifiedDateTime', 'identifiedPeriod'],
  DeviceRequest: ['occurrenceDateTime', 'occurrencePeriod', 'authoredOn'],
  DeviceUseStatement: ['timingDateTime', 'timingPeriod', 'recordedOn'],
  DiagnosticReport: ['effectiveDateTime', 'effectivePeriod', 'issued'],
  DocumentReference: ['date'],
  Encounter: ['period'],
  EpisodeOfCare: ['period'],
  FamilyMemberHistory: ['date'],
  Flag: ['period'],
  Goal: ['startDate'],
  ImagingStudy: ['started'],
  Immunization: ['occurrenceDateTime'],
  ImmunizationEvaluation: ['date'],
  MedicationAdministration: ['effectiveDateTime', 'effectivePeriod'],
  MedicationDispense: ['whenHandedOver', 'whenPrepared'],
  MedicationRequest: ['authoredOn'],
  MedicationStatement: ['effectiveDateTime', 'effectivePeriod', 'dateAsserted'],
  NutritionOrder: ['dateTime'],
  Observation: ['effectiveDateTime', 'effectivePeriod', 'effectiveInstant', 'issued'],
  Procedure: ['performedDateTime', 'performedPeriod'],
  QuestionnaireResponse: ['authored'],
  RiskAssessment: ['occurrenceDateTime', 'occurrencePeriod'],
  ServiceRequest: ['occurrenceDateTime', 'occurrencePeriod', 'authoredOn'],
  Specimen: ['collection'],
  VisionPrescription: ['dateWritten'],
};

/** [lo, hi) in ms of the resource's care date, or undefined when it has none. */
export function careRange(resource: Obj): [number, number] | undefined {
  const names = CARE_DATE[resource.resourceType as string];
  if (!names) return undefined;
  for (const name of names) {
    const v = resource[name];
    if (typeof v === 'string') return dateRange(v);
    if (v && typeof v === 'object') {
      const o = v as Obj;
      // Period (start/end) or Specimen.collection (collectedDateTime/collectedPeriod)
      const period = (typeof o.collectedDateTime === 'string' ? { start: o.collectedDateTime, end: o.collectedDateTime } : (o.collectedPeriod as Obj | undefined) ?? o) as Obj;
      const lo = typeof period.start === 'string' ? dateRange(period.start)?.[0] : -Infinity;
      const hi = typeof period.end === 'string' ? dateRange(period.end)?.[1] : Infinity;
      if (lo === undefined || hi === undefined) return undefined;
      if (lo === -Infinity && hi === Infinity) continue;
      return [lo, hi];
    }
  }
  return undefined;
}

/** True when the care date overlaps [start, end) (an open bound is unbounded) or there is no care date. */
export function inCareWindow(resource: Obj, start: number | undefined, end: number | undefined): boolean {
  if (start === undefined && end === undefined) return true;
  const range = careRange(resource);
  if (!range) return true;
  return (start === undefined || range[1] > start) && (end === undefined || range[0] < end);
}

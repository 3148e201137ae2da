/**
 * One synthetic patient of an exact size: the Patient, a few allergies, then
 * visits (an Encounter with its observations, problems, prescriptions and
 * dispenses, procedures, reports and vaccines) until the size is reached.
 */
import { ALLERGIES, CITIES, CONDITIONS, CVX, FAMILY, GIVEN, LABS, LOINC, PROCEDURES, SNOMED, UCUM, VACCINES } from './catalog.js';
import { HN_SYSTEM, NATIONAL_ID_SYSTEM, PLATFORM_CARE_ID_SYSTEM, ref, syntheticId, type GeneratedPatient, type Group, type Resource } from './model.js';
import { EPOCH_MS, SPAN_MS, isoDate, isoSeconds, type Rng } from './random.js';
import type { SharedPool } from './shared.js';

const OBS_CATEGORY = 'http://terminology.hl7.org/CodeSystem/observation-category';
const HOUR = 3_600_000;

export function generatePatient(rng: Rng, pool: SharedPool, index: number, size: number): GeneratedPatient {
  const id = rng.uuid();
  const careId = `PC${String(index + 1).padStart(6, '0')}${rng.digits(4)}`;
  const birth = EPOCH_MS - rng.int(1, 85) * 365.25 * 24 * HOUR - rng.int(0, 364) * 24 * HOUR;
  const patient: Resource = {
    resourceType: 'Patient',
    id,
    identifier: [
      { use: 'usual', system: PLATFORM_CARE_ID_SYSTEM, value: careId },
      { use: 'official', system: HN_SYSTEM, value: `HN${rng.digits(8)}`, type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'MR' }] } },
      { system: NATIONAL_ID_SYSTEM, value: rng.digits(13), type: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v2-0203', code: 'NI' }] } },
      ...syntheticId(id),
    ],
    active: true,
    name: [{ use: 'official', family: rng.pick(FAMILY), given: [rng.pick(GIVEN)] }],
    gender: rng.pick(['female', 'male'] as const),
    birthDate: isoDate(birth),
    address: [{ city: rng.pick(CITIES), country: 'TH' }],
    managingOrganization: ref(pool.organizations[0] as Resource),
    generalPractitioner: [ref(rng.pick(pool.practitioners))],
  };
  const groups: Group[] = [];
  let left = size - 1;
  const take = (r: Resource, into: Resource[]): boolean => {
    if (left <= 0) return false;
    into.push(r);
    left--;
    return true;
  };
  const subject = ref(patient);
  for (let a = rng.int(0, 2); a > 0 && left > 0; a--) {
    const [code, display] = rng.pick(ALLERGIES);
    const aid = rng.uuid();
    const r: Resource = {
      resourceType: 'AllergyIntolerance', id: aid, identifier: syntheticId(aid),
      clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: 'active' }] },
      code: { coding: [{ system: SNOMED, code, display }] }, patient: subject,
      recordedDate: isoSeconds(EPOCH_MS + rng.next() * SPAN_MS), recorder: ref(rng.pick(pool.practitioners)),
    };
    const group: Resource[] = [];
    take(r, group);
    groups.push({ resources: group });
  }
  // Visits spread over ten years, in date order.
  const visits = Math.max(1, Math.ceil(left / 12));
  const starts = Array.from({ length: visits }, () => EPOCH_MS + Math.floor(rng.next() * SPAN_MS)).sort((x, y) => x - y);
  for (let v = 0; left > 0; v++) {
    const start = starts[v % visits] as number;
    groups.push({ resources: visit(rng, pool, subject, start, () => left, (n) => (left -= n)) });
  }
  return { patient, careId, groups, size: size - left };
}

function visit(rng: Rng, pool: SharedPool, subject: { reference: string }, start: number, left: () => number, use: (n: number) => void): Resource[] {
  const out: Resource[] = [];
  const add = (r: Resource): boolean => {
    if (left() <= 0 || out.length >= 60) return false;
    out.push(r);
    use(1);
    return true;
  };
  const doctor = rng.pick(pool.practitioners);
  const location = rng.pick(pool.locations);
  const end = start + rng.int(1, 6) * HOUR;
  const eid = rng.uuid();
  const encounter: Resource = {
    resourceType: 'Encounter', id: eid, identifier: syntheticId(eid), status: 'finished',
    class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: rng.pick(['AMB', 'AMB', 'EMER', 'IMP']) },
    subject, participant: [{ individual: ref(doctor) }],
    period: { start: isoSeconds(start), end: isoSeconds(end) },
    location: [{ location: ref(location) }], serviceProvider: ref(pool.organizations[0] as Resource),
  };
  add(encounter);
  const context = ref(encounter);
  const at = (): string => isoSeconds(start + Math.floor(rng.next() * (end - start)));
  const observations: Resource[] = [];
  for (let n = rng.int(3, 10); n > 0; n--) {
    const lab = rng.pick(LABS);
    const oid = rng.uuid();
    const value = Number((lab.low + rng.next() * (lab.high - lab.low)).toFixed(lab.decimals));
    const obs: Resource = {
      resourceType: 'Observation', id: oid, identifier: syntheticId(oid), status: 'final',
      category: [{ coding: [{ system: OBS_CATEGORY, code: lab.category }] }],
      code: { coding: [{ system: LOINC, code: lab.code, display: lab.display }], text: lab.display },
      subject, encounter: context, effectiveDateTime: at(), issued: isoSeconds(end),
      performer: [ref(doctor)], valueQuantity: { value, unit: lab.unit, system: UCUM, code: lab.unit },
    };
    if (add(obs)) observations.push(obs);
  }
  const labs = observations.filter((o) => (o.category as Array<{ coding: Array<{ code: string }> }>)[0]?.coding[0]?.code === 'laboratory');
  if (labs.length > 0 && rng.chance(0.6)) {
    const rid = rng.uuid();
    add({
      resourceType: 'DiagnosticReport', id: rid, identifier: syntheticId(rid), status: 'final',
      code: { coding: [{ system: LOINC, code: '24323-8', display: 'Comprehensive metabolic 2000 panel' }] },
      subject, encounter: context, effectiveDateTime: at(), issued: isoSeconds(end),
      performer: [ref(pool.organizations[2] as Resource)], result: labs.map(ref),
    });
  }
  if (rng.chance(0.4)) {
    const [code, display] = rng.pick(CONDITIONS);
    const cid = rng.uuid();
    add({
      resourceType: 'Condition', id: cid, identifier: syntheticId(cid),
      clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: rng.pick(['active', 'resolved']) }] },
      code: { coding: [{ system: SNOMED, code, display }], text: display },
      subject, encounter: context, onsetDateTime: at(), recordedDate: isoSeconds(end), asserter: ref(doctor),
    });
  }
  for (let n = rng.chance(0.5) ? rng.int(1, 2) : 0; n > 0; n--) {
    const med = rng.pick(pool.medications);
    const mid = rng.uuid();
    const authoredOn = at();
    const request: Resource = {
      resourceType: 'MedicationRequest', id: mid, identifier: syntheticId(mid), status: 'completed', intent: 'order',
      medicationReference: ref(med), subject, encounter: context, authoredOn, requester: ref(doctor),
      dosageInstruction: [{ text: rng.pick(['1 tablet daily', '1 tablet twice daily', '2 puffs as needed']) }],
    };
    if (!add(request)) break;
    const did = rng.uuid();
    add({
      resourceType: 'MedicationDispense', id: did, identifier: syntheticId(did), status: 'completed',
      medicationReference: ref(med), subject, context, authorizingPrescription: [ref(request)],
      performer: [{ actor: ref(rng.pick(pool.practitioners)) }], location: ref(pool.locations[5] ?? location),
      quantity: { value: rng.int(10, 90), unit: 'tablet' }, whenHandedOver: isoSeconds(end),
    });
  }
  if (rng.chance(0.15)) {
    const [code, display] = rng.pick(PROCEDURES);
    const pid = rng.uuid();
    add({
      resourceType: 'Procedure', id: pid, identifier: syntheticId(pid), status: 'completed',
      code: { coding: [{ system: SNOMED, code, display }] }, subject, encounter: context,
      performedPeriod: { start: isoSeconds(start), end: isoSeconds(end) }, performer: [{ actor: ref(doctor) }], location: ref(location),
    });
  }
  if (rng.chance(0.1)) {
    const [code, display] = rng.pick(VACCINES);
    const iid = rng.uuid();
    add({
      resourceType: 'Immunization', id: iid, identifier: syntheticId(iid), status: 'completed',
      vaccineCode: { coding: [{ system: CVX, code, display }] }, patient: subject, encounter: context,
      occurrenceDateTime: at(), primarySource: true, performer: [{ actor: ref(doctor) }], location: ref(location),
    });
  }
  return out;
}

/**
 * Code lists the generator draws from: common, real codes so the data looks
 * like a hospital's (LOINC vitals and labs, SNOMED CT problems and
 * procedures, RxNorm medications, CVX vaccines). Small on purpose.
 */
export const LOINC = 'http://loinc.org';
export const SNOMED = 'http://snomed.info/sct';
export const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm';
export const CVX = 'http://hl7.org/fhir/sid/cvx';
export const UCUM = 'http://unitsofmeasure.org';

export interface Lab {
  code: string;
  display: string;
  unit: string;
  low: number;
  high: number;
  decimals: number;
  category: 'vital-signs' | 'laboratory';
}

export const LABS: readonly Lab[] = [
  { code: '8867-4', display: 'Heart rate', unit: '/min', low: 52, high: 110, decimals: 0, category: 'vital-signs' },
  { code: '8480-6', display: 'Systolic blood pressure', unit: 'mm[Hg]', low: 95, high: 165, decimals: 0, category: 'vital-signs' },
  { code: '8462-4', display: 'Diastolic blood pressure', unit: 'mm[Hg]', low: 55, high: 100, decimals: 0, category: 'vital-signs' },
  { code: '8310-5', display: 'Body temperature', unit: 'Cel', low: 36.1, high: 38.6, decimals: 1, category: 'vital-signs' },
  { code: '9279-1', display: 'Respiratory rate', unit: '/min', low: 11, high: 24, decimals: 0, category: 'vital-signs' },
  { code: '29463-7', display: 'Body weight', unit: 'kg', low: 42, high: 118, decimals: 1, category: 'vital-signs' },
  { code: '2339-0', display: 'Glucose [Mass/volume] in Blood', unit: 'mg/dL', low: 70, high: 210, decimals: 0, category: 'laboratory' },
  { code: '4548-4', display: 'Hemoglobin A1c/Hemoglobin.total in Blood', unit: '%', low: 4.6, high: 9.8, decimals: 1, category: 'laboratory' },
  { code: '718-7', display: 'Hemoglobin [Mass/volume] in Blood', unit: 'g/dL', low: 10.5, high: 17.5, decimals: 1, category: 'laboratory' },
  { code: '2160-0', display: 'Creatinine [Mass/volume] in Serum or Plasma', unit: 'mg/dL', low: 0.5, high: 1.9, decimals: 2, category: 'laboratory' },
  { code: '2093-3', display: 'Cholesterol [Mass/volume] in Serum or Plasma', unit: 'mg/dL', low: 130, high: 290, decimals: 0, category: 'laboratory' },
  { code: '6690-2', display: 'Leukocytes [#/volume] in Blood', unit: '10*3/uL', low: 3.5, high: 13, decimals: 1, category: 'laboratory' },
];

export type Coded = readonly [code: string, display: string];

export const CONDITIONS: readonly Coded[] = [
  ['38341003', 'Hypertensive disorder'],
  ['44054006', 'Diabetes mellitus type 2'],
  ['195967001', 'Asthma'],
  ['13645005', 'Chronic obstructive lung disease'],
  ['233604007', 'Pneumonia'],
  ['68566005', 'Urinary tract infectious disease'],
  ['49436004', 'Atrial fibrillation'],
  ['35489007', 'Depressive disorder'],
  ['396275006', 'Osteoarthritis'],
  ['36971009', 'Sinusitis'],
];

export const PROCEDURES: readonly Coded[] = [
  ['73761001', 'Colonoscopy'],
  ['80146002', 'Appendectomy'],
  ['29303009', 'Electrocardiographic procedure'],
  ['399208008', 'Plain chest X-ray'],
  ['71388002', 'Procedure'],
  ['430193006', 'Medication reconciliation'],
  ['117015009', 'Throat culture'],
];

export const MEDICATIONS: readonly Coded[] = [
  ['314076', 'lisinopril 10 MG Oral Tablet'],
  ['860975', 'metformin hydrochloride 500 MG Extended Release Oral Tablet'],
  ['197361', 'amlodipine 5 MG Oral Tablet'],
  ['308136', 'amlodipine 2.5 MG Oral Tablet'],
  ['617314', 'atorvastatin 10 MG Oral Tablet'],
  ['198211', 'simvastatin 40 MG Oral Tablet'],
  ['313782', 'acetaminophen 325 MG Oral Tablet'],
  ['310965', 'ibuprofen 200 MG Oral Tablet'],
  ['308182', 'amoxicillin 250 MG Oral Capsule'],
  ['895994', 'fluticasone propionate 0.044 MG/ACTUAT Metered Dose Inhaler'],
  ['245314', 'albuterol 0.09 MG/ACTUAT Metered Dose Inhaler'],
  ['855332', 'warfarin sodium 5 MG Oral Tablet'],
  ['312961', 'simvastatin 20 MG Oral Tablet'],
  ['311372', 'omeprazole 20 MG Delayed Release Oral Capsule'],
  ['200064', 'sertraline 50 MG Oral Tablet'],
];

export const VACCINES: readonly Coded[] = [
  ['140', 'Influenza, seasonal, injectable, preservative free'],
  ['208', 'SARS-COV-2 (COVID-19) vaccine, mRNA, spike protein, LNP, preservative free, 30 mcg/0.3mL dose'],
  ['113', 'Td (adult) preservative free'],
  ['133', 'Pneumococcal conjugate PCV 13'],
  ['43', 'Hep B, adult'],
];

export const ALLERGIES: readonly Coded[] = [
  ['91936005', 'Allergy to penicillin'],
  ['300916003', 'Latex allergy'],
  ['91935009', 'Allergy to peanuts'],
  ['419474003', 'Allergy to mould'],
  ['232347008', 'Dander (animal) allergy'],
];

export const GIVEN = ['Anong', 'Somchai', 'Maria', 'James', 'Aiko', 'Pim', 'Lucas', 'Fatima', 'Wei', 'Olivia', 'Kwame', 'Noah', 'Sofia', 'Arjun', 'Chloe', 'Mateo'];
export const FAMILY = ['Srisuk', 'Garcia', 'Nguyen', 'Smith', 'Tanaka', 'Okafor', 'Kowalski', 'Chen', 'Silva', 'Haddad', 'Jensen', 'Patel', 'Wongsa', 'Moreau'];
export const CITIES = ['Bangkok', 'Chiang Mai', 'Khon Kaen', 'Hat Yai', 'Nakhon Ratchasima'];
export const SPECIALTIES: readonly Coded[] = [
  ['419772000', 'Family practice'],
  ['394579002', 'Cardiology'],
  ['394583002', 'Endocrinology'],
  ['418112009', 'Pulmonary medicine'],
  ['394814009', 'General practice'],
];

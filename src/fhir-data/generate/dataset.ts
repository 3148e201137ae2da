/**
 * `generateDataset(options)`: the pure core of `fhir generate`. Same options,
 * same dataset, byte for byte (seeded Rng, fixed calendar, no clock).
 */
import { HospitalApiError } from '../../errors/index.js';
import type { Dataset } from './model.js';
import { generatePatient } from './patient.js';
import { Rng } from './random.js';
import { generateShared, sharedList } from './shared.js';

export interface DatasetOptions {
  patients: number;
  seed: string | number;
  /** `MIN-MAX` (log-uniform per patient), `N` (every patient), or `A,B,C` (cycled). Default `10-2000`. */
  sizes?: string;
}

export const DEFAULT_SIZES = '10-2000';
export const MAX_PATIENT_SIZE = 10_000;

export type SizePlan = (rng: Rng, index: number) => number;

/** Parses --sizes. @throws ERR_FHIR_GENERATE_BAD_OPTION */
export function parseSizes(text: string = DEFAULT_SIZES): SizePlan {
  const bad = (detail: string) => new HospitalApiError('ERR_FHIR_GENERATE_BAD_OPTION', { name: '--sizes', detail });
  const num = (s: string): number => {
    if (!/^\d+$/.test(s.trim())) throw bad(`"${text}" is not MIN-MAX, N or a comma list of N`);
    const n = Number(s);
    if (n < 1 || n > MAX_PATIENT_SIZE) throw bad(`each size must be 1..${MAX_PATIENT_SIZE} resources, got ${n}`);
    return n;
  };
  const range = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  if (range) {
    const lo = num(range[1] as string);
    const hi = num(range[2] as string);
    if (lo > hi) throw bad(`range ${lo}-${hi} is reversed`);
    // Log-uniform: most patients are small, a few are large, as in a real hospital.
    return (rng) => Math.min(hi, Math.round(Math.exp(Math.log(lo) + rng.next() * (Math.log(hi) - Math.log(lo)))));
  }
  const list = text.split(',').map(num);
  return (_rng, index) => list[index % list.length] as number;
}

/** @throws ERR_FHIR_GENERATE_BAD_OPTION */
export function generateDataset(options: DatasetOptions): Dataset {
  const patients = Number(options.patients);
  if (!Number.isInteger(patients) || patients < 0 || patients > 1_000_000) {
    throw new HospitalApiError('ERR_FHIR_GENERATE_BAD_OPTION', { name: '--patients', detail: `expected an integer 0..1000000, got ${String(options.patients)}` });
  }
  if (options.seed === undefined || String(options.seed).length === 0) {
    throw new HospitalApiError('ERR_FHIR_GENERATE_BAD_OPTION', { name: '--seed', detail: 'a seed is required for reproducible output' });
  }
  const plan = parseSizes(options.sizes ?? DEFAULT_SIZES);
  const rng = new Rng(options.seed);
  const pool = generateShared(rng);
  const out: Dataset = { seed: String(options.seed), shared: sharedList(pool), patients: [] };
  for (let i = 0; i < patients; i++) {
    // One sub-stream per patient: patient i does not change when N grows.
    const prng = new Rng(`${String(options.seed)}#patient-${i}`);
    out.patients.push(generatePatient(prng, pool, i, plan(prng, i)));
  }
  return out;
}

/** Counts per resource type, shared resources included. */
export function countByType(dataset: Dataset): Record<string, number> {
  const counts: Record<string, number> = {};
  const bump = (t: string) => void (counts[t] = (counts[t] ?? 0) + 1);
  for (const r of dataset.shared) bump(r.resourceType);
  for (const p of dataset.patients) {
    bump('Patient');
    for (const g of p.groups) for (const r of g.resources) bump(r.resourceType);
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

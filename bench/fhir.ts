import type { BenchSection } from './report.js';

/** The fhir benchmark (see its issue). */
export async function run(): Promise<BenchSection> {
  throw new Error('the fhir benchmark is not written yet');
}

import type { BenchSection } from './report.js';

/** The api benchmark (see its issue). */
export async function run(): Promise<BenchSection> {
  throw new Error('the api benchmark is not written yet');
}

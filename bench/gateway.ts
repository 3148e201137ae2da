import type { BenchSection } from './report.js';

/** The gateway benchmark (see its issue). */
export async function run(): Promise<BenchSection> {
  throw new Error('the gateway benchmark is not written yet');
}

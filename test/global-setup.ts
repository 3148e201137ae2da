/**
 * Tests run the real CLI (bin/hospital-api.js → dist/) as child processes, so dist/ must
 * be the code under test: build it once before any test file runs.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  execFileSync(process.execPath, [fileURLToPath(new URL('../scripts/build.mjs', import.meta.url))], { stdio: 'inherit' });
}

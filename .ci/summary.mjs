// Reads vitest's JSON report and prints CI's closing line: "tests: N passed, N failed".
// Failed = failed tests, plus each test file that failed without a failed test (a file
// that did not load, an error outside any test), plus 1 when npm test exited non-zero
// with nothing else failed (typecheck, a missing report).
import { readFileSync } from 'node:fs';

const [file, status] = process.argv.slice(2);
let passed = 0;
let failed = 0;
try {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  passed = report.numPassedTests ?? 0;
  failed = report.numFailedTests ?? 0;
  for (const result of report.testResults ?? []) {
    const failedTests = (result.assertionResults ?? []).filter((a) => a.status === 'failed').length;
    if (result.status === 'failed' && failedTests === 0) failed += 1;
  }
} catch {
  // no report: npm test stopped before vitest wrote one (typecheck failed)
}
if (Number(status) !== 0 && failed === 0) failed = 1;
process.stdout.write(`tests: ${passed} passed, ${failed} failed\n`);

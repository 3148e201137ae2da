import { defineConfig } from 'vitest/config';

// Tests start real servers and child processes; give them room, and run files in
// separate processes so a server left behind by one file cannot leak into another.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    // .ci/run asks for a JSON report too, to count failed files as well as failed tests.
    reporters: process.env.HOSPITAL_API_TEST_REPORT
      ? ['default', ['json', { outputFile: process.env.HOSPITAL_API_TEST_REPORT }]]
      : ['default'],
  },
});

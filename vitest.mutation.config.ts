import { defineConfig } from 'vitest/config';

/**
 * The tests `npm run mutation` (StrykerJS) runs against mutated code: in-process
 * tests only. CLI tests run dist/, which Stryker does not mutate, so they could
 * not kill a mutant and would only cost time; no global setup (the build) either,
 * since scripts/mutation.mjs builds dist/ once before Stryker starts. Stryker's
 * vitest runner narrows each run further to the files related to the mutated
 * module (vitest's `related`).
 *
 * Every test here must pass when run ALONE: with per-test coverage Stryker runs only
 * the tests that reach a mutant, so a test that needs an earlier test's state fails
 * for any mutant and counts it as killed. test/checks/run.test.ts is such a
 * sequence (consumer create, then verify), hence not listed; checks.test.ts covers
 * the checks test by test.
 */
export default defineConfig({
  test: {
    include: [
      'test/checks/record/*.test.ts',
      'test/checks/*.test.ts',
      'test/api/access.test.ts',
      'test/api/records.test.ts',
      'test/api/units.test.ts',
      'test/api/*.mutation-kill.test.ts',
      'test/api/fhir-url.test.ts',
      'test/api/platform-client.test.ts',
      'test/api/fhir-client.test.ts',
      'test/api/patients-stream.test.ts',
      'test/api/hardening.test.ts',
      'test/api/patients-route.test.ts',
      'test/api/logging.test.ts',
      'test/gateway/proxy/auth-plugins.test.ts',
      'test/gateway/proxy/plugin-schemas.test.ts',
      'test/gateway/admin/plugins-info.test.ts',
      'test/gateway/admin/consumers-credentials.test.ts',
      'test/gateway/**/*.mutation-kill.test.ts',
      'test/gateway/proxy/key-auth-body.test.ts',
      'test/gateway/proxy/basic-auth-verify.test.ts',
    ],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});

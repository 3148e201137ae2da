// StrykerJS configuration for `npm run mutation` (issue 11): mutation testing of the
// code that decides (acceptance checks, the signed record, the Hospital API's request
// path, the gateway's auth plugins). scripts/mutation.mjs runs one target at a time,
// chosen by MUTATION_TARGET, and prints the score per folder.
// Docs: https://stryker-mutator.io/docs/stryker-js/configuration/ and
// https://stryker-mutator.io/docs/stryker-js/vitest-runner/
import { cpus } from 'node:os';

export const TARGETS = {
  checks: ['src/checks/**/*.ts', '!src/checks/record/**/*.ts'],
  record: ['src/checks/record/**/*.ts'],
  // The Hospital API's request path, one file (or folder) per run: whole, it is too slow
  // for 2 shared cores (`npm run mutation -- api` runs the four one after another).
  'api-routes': ['src/api/routes/**/*.ts'],
  'api-fhir-client': ['src/api/fhir/fhir-client.ts'],
  'api-fhir-url': ['src/api/fhir/fhir-url.ts'],
  'api-platform-client': ['src/api/platform/platform-client.ts'],
  // The gateway's auth plugins, one plugin per run (`npm run mutation -- gateway-auth` runs both).
  'gateway-key-auth': ['src/gateway/plugins/key-auth/**/*.ts'],
  'gateway-basic-auth': ['src/gateway/plugins/basic-auth/**/*.ts'],
};

/** Names that stand for several targets, run one after another. */
export const GROUPS = {
  api: ['api-routes', 'api-fhir-client', 'api-fhir-url', 'api-platform-client'],
  'gateway-auth': ['gateway-key-auth', 'gateway-basic-auth'],
};

const target = process.env.MUTATION_TARGET ?? 'checks';
if (!TARGETS[target]) throw new Error(`MUTATION_TARGET must be one of ${Object.keys(TARGETS).join(', ')}`);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: true },
  coverageAnalysis: 'perTest',
  // Static mutants (module-level constants) rerun every related test from a cold start;
  // on 2 shared cores they took most of the time, so they are left out (reported as Ignored).
  ignoreStatic: process.env.MUTATION_STATIC !== '1',
  // Stryker rewrites `extends`/`references` of the named tsconfig with TypeScript's JS API,
  // which TypeScript 7 (the native compiler) no longer has; ours has neither, so point the
  // rewrite at no file. Type checks stay off in mutants (Stryker adds @ts-nocheck).
  tsconfigFile: 'tsconfig.stryker-no-rewrite.json',
  mutate: TARGETS[target],
  // Two shared cores: one mutant at a time unless told otherwise.
  concurrency: Number(process.env.MUTATION_CONCURRENCY ?? Math.max(1, Math.min(2, cpus().length - 1))),
  // added to 1.5 x the mutant's test time: a mutant that loops is cut off after that
  timeoutMS: 5_000,
  reporters: ['clear-text', 'json', 'progress'],
  jsonReporter: { fileName: `reports/mutation/${target}.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  // every target's sandboxes live under .stryker-tmp/: never copy one into another
  ignorePatterns: ['/.stryker-tmp', '/reports', '/dist.next', '/coverage'],
  tempDirName: `.stryker-tmp/${target}`,
  cleanTempDir: true,
};

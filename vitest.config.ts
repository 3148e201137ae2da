import { configDefaults, defineConfig } from 'vitest/config';

/** The docker and swarm tiers: real engines, real stacks, each file minutes of mostly waiting (issue 44). */
const TIERS = ['test/docker-engine/**', 'test/swarm-engine/**'];

// Tests start real servers and child processes; give them room, and run files in
// separate processes so a server left behind by one file cannot leak into another.
export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    // .ci/run asks for a JSON report too, to count failed files as well as failed tests.
    reporters: process.env.HOSPITAL_API_TEST_REPORT
      ? ['default', ['json', { outputFile: process.env.HOSPITAL_API_TEST_REPORT }]]
      : ['default'],
    projects: [
      {
        extends: true,
        // vitest's default on this 2-CPU kind of machine: one file at a time
        test: { name: 'native', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...TIERS], sequence: { groupOrder: 0 } },
      },
      {
        extends: true,
        // After the native files, two tier files at a time: each stack is its own compose project on ports of its
        // own, the swarm files take a lock (test/swarm-engine/nodes.ts), and a file's checks look at its own
        // project's containers and volumes only. A file spends most of its minutes waiting on the engine
        // (health checks, restarts), so two overlap on two cores (issue 44: CI was 3,238 s, 2,572 of them the
        // tiers' files one after another).
        test: { name: 'tiers', include: TIERS.map((t) => `${t.slice(0, -2)}**/*.test.ts`), maxWorkers: 2, sequence: { groupOrder: 1 } },
      },
    ],
  },
});

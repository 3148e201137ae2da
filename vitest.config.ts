import { defineConfig } from 'vitest/config';

// Tests start real servers and child processes; give them room, and run files in
// separate processes so a server left behind by one file cannot leak into another.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
  },
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // A minute: with two files at a time, tests that run the CLI a dozen times (about 15 s alone) share
    // the cores with another file; a hang still fails.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two files at a time: vitest's default on 2 cores is one, and most files mostly wait (README, Development).
    maxWorkers: 2,
  },
});

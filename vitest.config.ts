import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // graphql ships ESM (.mjs) and CJS (.js) builds; Pothos and Yoga load the CJS one from
    // node_modules, so code vitest transforms must load the same copy ("another module or realm").
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: [
      'src/**/*.test.ts',
      'test/**/*.test.ts',
      'workers/**/*.test.ts',
      'clients/**/test/**/*.test.ts',
      'examples/**/*.test.ts',
    ],
    // chdb binds one data folder per process: each test file gets its own process (and folder).
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});

/** Jest runs the TypeScript sources directly (ts-jest, ESM). Type checking is `npm run typecheck`. */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, isolatedModules: true, tsconfig: 'tsconfig.json' }]
  },
  setupFiles: ['<rootDir>/test/setup/polyfills.cjs'],
  testTimeout: 30000,
  // e2e suites start real node processes; two workers keep the 2-core machine responsive.
  maxWorkers: 2
}

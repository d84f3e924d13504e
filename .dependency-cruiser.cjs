/**
 * How the layers may depend (docs/architecture.md), checked by `npm run depcheck` in CI:
 * - node/ (the MQTT core and its services) imports nothing from rules/, cluster/ or api/;
 * - rules/, cluster/ and api/ build on node/ and do not reach into each other, except that
 *   the API's handlers call the rule engine's and the schema registry's service layers;
 * - only bin/ (the composition root and the programs) assembles them all;
 * - no runtime import cycle anywhere (type-only imports do not run).
 */
module.exports = {
  forbidden: [
    {
      name: 'core-imports-no-layer-above',
      comment: 'node/ is the core: the parts above it are given to it by the composition root (bin/assemble.ts)',
      severity: 'error',
      from: { path: '^node/' },
      to: { path: '^(rules|cluster|api|bin)/' }
    },
    {
      name: 'rules-stays-out-of-cluster-and-api',
      severity: 'error',
      from: { path: '^rules/' },
      to: { path: '^(cluster|api|bin)/' }
    },
    {
      name: 'cluster-stays-out-of-rules-and-api',
      severity: 'error',
      from: { path: '^cluster/' },
      to: { path: '^(rules|api|bin)/' }
    },
    {
      name: 'api-uses-only-the-rule-service-layers',
      comment: 'the API calls the rule engine through its service layers (rules/rule-ops.ts, rules/schemas/schema-ops.ts) and reads its types',
      severity: 'error',
      from: { path: '^api/' },
      to: {
        path: '^(rules|cluster|bin)/',
        pathNot: '^rules/(rule-ops|schemas/schema-ops)\\.ts$',
        dependencyTypesNot: ['type-only']
      }
    },
    {
      name: 'no-runtime-cycle',
      severity: 'error',
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'], conditionNames: ['import', 'require', 'node', 'default'] }
  }
}

/**
 * How the layers may depend (docs/architecture.md), checked by `npm run depcheck` in CI:
 * - node/ (the MQTT core and its services) imports nothing from plugins/, rules/, cluster/,
 *   api/ or bin/;
 * - rules/, cluster/ and api/ build on node/ and do not reach into each other, except that
 *   the API's handlers call the rule engine's and the schema registry's service layers;
 *   none of them imports a plugin (a plugin adds to them through `PluginParts`);
 * - a plugin (plugins/<name>/) builds on node/, rules/ and api/ and on what the plugins share
 *   (plugins/kit/), never on another plugin's folder; plugins/kit/ imports no plugin;
 * - the plugin list (plugins/index.ts) is read by bin/ only (and by the tests and benchmarks);
 * - only bin/ (the composition root and the programs) assembles them all;
 * - the dashboard web app (dashboard/) imports none of the Node rooms: it speaks HTTP;
 * - no runtime import cycle anywhere (type-only imports do not run).
 * test/lint/depcheck.test.ts shows each rule firing on a small tree of its own.
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
      name: 'core-imports-no-plugin',
      comment: 'node/ is the core: plugins extend it through PluginDefinition (node/plugins/types.ts) and are listed by the composition root, never imported by it',
      severity: 'error',
      from: { path: '^node/' },
      to: { path: '^plugins/' }
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
      name: 'parts-import-no-plugin',
      comment: 'rules/, cluster/ and api/ do not know the plugins: a plugin registers its resource types, actions and API routes through PluginParts (plugins/kit/parts.ts) while it is loaded',
      severity: 'error',
      from: { path: '^(rules|cluster|api)/' },
      to: { path: '^plugins/' }
    },
    {
      name: 'plugin-imports-no-other-plugin',
      comment: 'a plugin folder (plugins/<name>/) uses its own files and what the plugins share (plugins/kit/), never another plugin\'s internals: move what two plugins share into plugins/kit/',
      severity: 'error',
      from: { path: '^plugins/([^/]+)/', pathNot: '^plugins/kit/' },
      to: { path: '^plugins/', pathNot: ['^plugins/$1/', '^plugins/kit/', '^plugins/index\\.ts$'] }
    },
    {
      name: 'kit-imports-no-plugin',
      comment: 'plugins/kit/ is what several plugins share: it builds on node/, rules/ and api/ and knows no plugin',
      severity: 'error',
      from: { path: '^plugins/kit/' },
      to: { path: '^plugins/', pathNot: '^plugins/kit/' }
    },
    {
      name: 'plugins-stay-out-of-cluster-and-bin',
      comment: 'a plugin builds on the interfaces of the core, the rule engine and the API; what it needs of the cluster the core declares (e.g. node.bridgeTransport, node/bridge-transport.ts)',
      severity: 'error',
      from: { path: '^plugins/' },
      to: { path: '^(cluster|bin)/' }
    },
    {
      name: 'only-the-root-reads-the-plugin-list',
      comment: 'plugins/index.ts (pluginList) is read by the composition root (bin/) and by the tests and benchmarks only',
      severity: 'error',
      from: { pathNot: '^(bin|test|bench)/' },
      to: { path: '^plugins/index\\.ts$' }
    },
    {
      name: 'dashboard-app-speaks-http-only',
      comment: 'the dashboard web app (dashboard/, its own tsconfig with DOM types, a Vite build) talks to the node over HTTP only and imports none of the Node rooms',
      severity: 'error',
      from: { path: '^dashboard/' },
      to: { path: '^(node|plugins|rules|cluster|api|bin)/' }
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

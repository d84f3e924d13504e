/**
 * `svc_rule_engine` (EMQ X's emqx_rule_engine): loading it starts running the stored rules on
 * the hooks bus, unloading stops them. Rules and resources stay stored either way, and the
 * API and CLI manage them either way (docs/rules.md). No keys yet (`rule_engine.*` is
 * reserved for it in etc/plugins/svc_rule_engine.conf).
 *
 * One definition per node, made by the node's rules part (rules/part.ts), which holds the
 * engine the plugin starts and stops.
 */
import type { PluginDefinition } from '../node/plugins/types.js'
import { VERSION } from '../node/version.js'
import type { RuleEngine } from './engine.js'

/**
 * The `svc_rule_engine` plugin of one node. `engine` gives that node's engine; it is asked
 * at each load, which comes after the parts' operations created it (start order in
 * docs/architecture.md).
 */
export function createRuleEnginePlugin (engine: () => Pick<RuleEngine, 'start' | 'stop'>): PluginDefinition {
  return {
    name: 'svc_rule_engine',
    version: VERSION,
    description: 'Starling Rule Engine',
    configSchema: {},
    loadedByDefault: true,
    async load () {
      const running = engine()
      running.start()
      return { unload: async () => { await running.stop() } }
    }
  }
}

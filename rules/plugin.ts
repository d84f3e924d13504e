/**
 * `svc_rule_engine` (EMQ X's emqx_rule_engine): loading it starts running the stored rules on
 * the hooks bus, unloading stops them. Rules and resources stay stored either way, and the
 * API and CLI manage them either way (docs/rules.md). No keys yet (`rule_engine.*` is
 * reserved for it in etc/plugins/svc_rule_engine.conf).
 */
import type { PluginDefinition } from '../node/plugins/types.js'
import { VERSION } from '../node/version.js'
import { ruleEngineOf } from './engine.js'

/** The `svc_rule_engine` plugin. */
export const ruleEnginePlugin: PluginDefinition = {
  name: 'svc_rule_engine',
  version: VERSION,
  description: 'Starling Rule Engine',
  configSchema: {},
  loadedByDefault: true,
  async load ({ node }) {
    const engine = ruleEngineOf(node)
    engine.start()
    return { unload: async () => { engine.stop() } }
  }
}

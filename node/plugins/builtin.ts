/**
 * The plugins Starling's node code defines, in the order the manager loads them.
 * `svc_management` and `svc_rule_engine` are switches for now: loading one only records
 * (in the manager's state, `isActive(name)`) that the feature is on. The management API
 * (issue 4) and the rule engine (issue 6) attach to them.
 */
import { delayedPublishPlugin } from '../delayed/plugin.js'
import { retainerPlugin } from '../retainer/plugin.js'
import { VERSION } from '../version.js'
import type { PluginDefinition } from './types.js'

/** A plugin whose load and unload only switch a feature that other code attaches to. */
function featureSwitch (name: string, description: string): PluginDefinition {
  return {
    name,
    version: VERSION,
    description,
    configSchema: {},
    loadedByDefault: true,
    async load () {
      return { unload: async () => undefined }
    }
  }
}

/**
 * `svc_management`: the management REST API and its CLI counterparts (EMQ X's
 * emqx_management). A switch for now: the /api/v3/ server (issue 4) attaches to it. Its
 * keys (`management.*`) live in `etc/starling.conf`.
 */

/**
 * `svc_rule_engine`: the SQL rule engine (EMQ X's emqx_rule_engine). A switch for now: the
 * rule engine (issue 6) attaches to it; its keys will be `rule_engine.*`.
 */
export const ruleEnginePlugin: PluginDefinition = featureSwitch('svc_rule_engine',
  'Starling Rule Engine')

/** Every plugin this module knows, in load order: management first, as EMQ X's file lists it. */
export const CORE_PLUGINS: readonly PluginDefinition[] = [
  retainerPlugin,
  ruleEnginePlugin,
  delayedPublishPlugin
]

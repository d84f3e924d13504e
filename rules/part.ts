/**
 * The rules part of one node: its rule engine (rules, resources, actions, schema registry),
 * the `svc_rule_engine` plugin that runs it, and the operations the API and the CLI reach it
 * through. The composition root (bin/assemble.ts) creates one part per node, lists its
 * plugin, and gives its `registerOperations` to the node, which calls it once the node is
 * complete and before the plugins load. Nothing looks the engine up from the node: the part
 * holds it, and the root hands it to whoever needs it (the API part, the assembled node's
 * `rules`).
 *
 * Invariant: `engine` exists exactly after `registerOperations` ran, and that runs at most once.
 */
import type { StarlingNode } from '../node/node.js'
import type { PluginDefinition } from '../node/plugins/types.js'
import { createRuleEngine, type RuleEngine } from './engine.js'
import { createRuleEnginePlugin } from './plugin.js'
import { registerRuleOperations } from './rule-ops.js'
import { registerSchemaOperations } from './schemas/schema-ops.js'
import { ruleEngineSection } from './backup-section.js'

/** The rule engine of one node, as the composition root assembles it. */
export interface RulesPart {
  /** `svc_rule_engine`: loading it starts the engine, unloading stops it. */
  readonly plugin: PluginDefinition
  /**
   * Creates the node's engine (its stored rules, resources and schemas loaded; nothing runs)
   * and registers the rule and schema operations: `rules.metrics` and `resources.status` on
   * `node.rpc`, the `rules`, `rule-actions`, `resources`, `resource-types` and `schemas`
   * commands on `node.control`, and the engine's section of the data backup
   * (`node.services.backup`). A function that needs no `this`, for `NodeParts.operations`.
   * Rejects when called a second time.
   */
  registerOperations: (node: StarlingNode) => Promise<void>
  /** The node's engine; throws before {@link RulesPart.registerOperations} ran. */
  readonly engine: RuleEngine
}

/** A rules part for one node; nothing is created until `registerOperations`. */
export function createRulesPart (): RulesPart {
  let engine: RuleEngine | undefined
  let started = false
  const created = (): RuleEngine => {
    if (engine === undefined) throw new Error('the rule engine is not created yet: RulesPart.registerOperations(node) creates it, before the plugins load')
    return engine
  }
  return {
    plugin: createRuleEnginePlugin(created),
    registerOperations: async (node) => {
      if (started) throw new Error(`the rules part of node ${node.name} registered its operations already: create one part per node`)
      started = true
      const made = await createRuleEngine(node)
      engine = made
      registerRuleOperations({ engine: made, rpc: node.rpc, control: node.control, name: node.name })
      registerSchemaOperations({ engine: made, control: node.control })
      node.services.backup.add(ruleEngineSection(made))
    },
    get engine () {
      return created()
    }
  }
}

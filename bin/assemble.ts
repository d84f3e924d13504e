/**
 * The composition root: the one place a Starling node is assembled from its parts. The MQTT
 * core and its services (node/) know nothing of the layers above them; this module gives
 * startNode the plugins, operations and cluster of those layers, and builds the
 * `starling-ctl` command list from every part's commands. `bin/starling`, `bin/starling-ctl`
 * and the tests start nodes through here. docs/architecture.md draws the picture.
 *
 * Start order (stop is the reverse): store, MQTT core, control socket, services (ACL,
 * banned, apps, $SYS, alarms, traces), the core's operations then the parts' (rule engine,
 * schema registry), the plugins in the order below (svc_management starts the API), the
 * cluster, and last the MQTT listeners, so every service applies to the first client.
 */
import { startNode, type NodeParts, type StartNodeInit, type StarlingNode } from '../node/node.js'
import type { StarlingConfig } from '../node/config/index.js'
import { pluginList } from '../plugins/index.js'
import type { PluginParts } from '../plugins/kit/parts.js'
import { createApiPart, type ApiPart } from '../api/plugin.js'
import { createRulesPart } from '../rules/part.js'
import type { RuleEngine } from '../rules/engine.js'
import { createCluster, type Cluster } from '../cluster/index.js'
import { ALL_CTL_COMMANDS, PART_CTL_COMMANDS } from './ctl-commands.js'

/**
 * A node assembled with every part: its cluster is the libp2p one, `rules` its rule engine
 * (and schema registry), `api` the management API part (its server while svc_management is
 * loaded).
 */
export type Starling = StarlingNode & { readonly cluster: Cluster, readonly rules: RuleEngine, readonly api: ApiPart }

/**
 * Starts a node with every part (see the module comment for the order). The parts are
 * built for this node only: several nodes in one process (the tests) share nothing.
 */
export async function startStarling (config: StarlingConfig, init: Omit<StartNodeInit, 'parts'>): Promise<Starling> {
  const rules = createRulesPart()
  const api = createApiPart({ rules })
  // what the plugins may extend: the rule engine (created before any plugin loads), the API's routes, and the API itself for another listener
  const pluginParts: PluginParts = {
    rules: { provide: (types, actions) => rules.engine.provide(types, actions) },
    api: { add: (routes) => api.routes.add(routes), app: (node, authenticate, extra, openApi) => api.app(node, authenticate, extra, openApi) }
  }
  const parts: NodeParts = {
    plugins: pluginList({ management: api.plugin, ruleEngine: rules.plugin }),
    pluginParts,
    operations: [async (node) => { await rules.registerOperations(node) }],
    cluster: createCluster,
    ctlCommands: PART_CTL_COMMANDS
  }
  const node = await startNode(config, { ...init, parts })
  // the parts' handles beside the node, for the programs and the tests (the node itself is complete without them)
  return Object.assign(node, { rules: rules.engine, api }) as Starling
}
export { ALL_CTL_COMMANDS }

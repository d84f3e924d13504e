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
import type { CtlCommand } from '../node/control/index.js'
import { pluginList, ROOM_PLUGINS } from '../plugins/index.js'
import type { PluginParts } from '../plugins/kit/parts.js'
import { NODE_CTL_COMMANDS } from '../node/ctl-commands.js'
import { createApiPart, type ApiPart } from '../api/plugin.js'
import { createRulesPart } from '../rules/part.js'
import type { RuleEngine } from '../rules/engine.js'
import { RULE_CTL_COMMANDS } from '../rules/ctl.js'
import { SCHEMA_CTL_COMMANDS } from '../rules/schemas/ctl.js'
import { createCluster, type Cluster } from '../cluster/index.js'
import { CLUSTER_CTL_COMMANDS } from '../cluster/ctl.js'

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
/**
 * The parts' `starling-ctl` commands: the rule engine's, the schema registry's, the
 * cluster's and the plugins' (each definition's `ctl`).
 */
const PART_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  ...RULE_CTL_COMMANDS,
  ...SCHEMA_CTL_COMMANDS,
  ...CLUSTER_CTL_COMMANDS,
  ...ROOM_PLUGINS.flatMap((p) => p.ctl ?? [])
]

/**
 * Every `starling-ctl` command: the core's, then the parts'. Each part defines its commands
 * beside its code; this is the one list the program is built from, and the node's control
 * socket checks each request's arguments against it.
 */
export const ALL_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [...NODE_CTL_COMMANDS, ...PART_CTL_COMMANDS]

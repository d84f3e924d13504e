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
import { CORE_PLUGINS } from '../node/plugins/index.js'
import { svcAuthClientid, svcAuthUsername } from '../node/auth/index.js'
import { NODE_CTL_COMMANDS } from '../node/ctl-commands.js'
import { managementApiPlugin } from '../api/plugin.js'
import { ruleEnginePlugin } from '../rules/plugin.js'
import { registerRuleOperations } from '../rules/rule-ops.js'
import { registerSchemaOperations } from '../rules/schemas/schema-ops.js'
import { RULE_CTL_COMMANDS } from '../rules/ctl.js'
import { SCHEMA_CTL_COMMANDS } from '../rules/schemas/ctl.js'
import { startCluster, type Cluster } from '../cluster/index.js'
import { CLUSTER_CTL_COMMANDS } from '../cluster/ctl.js'

/** A node assembled with every part: its cluster is the libp2p one. */
export type Starling = StarlingNode & { readonly cluster: Cluster }

/** The parts of a Starling node above the core. */
export const STARLING_PARTS: NodeParts = {
  // load order: the API first (so it answers while the others load), the rule engine after the core's plugins
  plugins: [managementApiPlugin, ...CORE_PLUGINS, ruleEnginePlugin, svcAuthClientid, svcAuthUsername],
  operations: [registerRuleOperations, registerSchemaOperations],
  cluster: startCluster
}

/** Starts a node with every part (see the module comment for the order). */
export async function startStarling (config: StarlingConfig, init: Omit<StartNodeInit, 'parts'>): Promise<Starling> {
  return await startNode(config, { ...init, parts: STARLING_PARTS }) as Starling
}

/**
 * Every `starling-ctl` command: the core's, then the rule engine's, the schema registry's and
 * the cluster's. Each part defines its commands beside its code; this is the one list the
 * program is built from.
 */
export const ALL_CTL_COMMANDS: ReadonlyArray<CtlCommand<any>> = [
  ...NODE_CTL_COMMANDS,
  ...RULE_CTL_COMMANDS,
  ...SCHEMA_CTL_COMMANDS,
  ...CLUSTER_CTL_COMMANDS
]

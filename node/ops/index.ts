import type { StarlingNode } from '../node.js'
import { registerMonitoringOperations } from './monitoring.js'
import { registerActionOperations } from './actions.js'
import { registerRuleOperations } from './rule-ops.js'
import { registerSchemaOperations } from './schema-ops.js'

/**
 * Registers every per-node operation (`connections.list`, `plugins.load` ...) on the node's
 * RPC. The API handlers and the CLI commands call them by name through `node.rpc`, so the
 * cluster can run them on any node. Each group lives in its own module beside this one.
 */
export function registerOperations (node: StarlingNode): void {
  void node
  registerMonitoringOperations(node)
  registerActionOperations(node)
  registerRuleOperations(node)
  registerSchemaOperations(node)
}

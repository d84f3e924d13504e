import type { StarlingNode } from '../node.js'
import { registerMonitoringOperations } from './monitoring.js'
import { registerActionOperations } from './actions.js'
import { registerDataOperations } from './backup/ops.js'

/**
 * Registers the core's per-node operations (`connections.list`, `plugins.load` ...) on the
 * node's RPC (the rule engine's and the schema registry's are registered by their own part,
 * given to startNode by the composition root). The API handlers and the CLI commands call them by name through `node.rpc`, so the
 * cluster can run them on any node. Each group lives in its own module beside this one: its
 * `register...` function is given the complete node, and the functions below it take only what
 * they use of it (the module's components type, e.g. `ConnectionsComponents`, or the one part).
 */
export function registerOperations (node: StarlingNode): void {
  registerMonitoringOperations(node)
  registerActionOperations(node)
  registerDataOperations(node, node.services.backup)
}

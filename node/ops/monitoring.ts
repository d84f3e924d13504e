/**
 * The monitoring operations of a node (issue 4): node info, listeners, metrics, stats,
 * alarms, connections, sessions, subscriptions and routes on `node.rpc`, and the
 * `starling-ctl` commands over them. The API routes (api/routes/monitoring*.ts) and the
 * CLI call the same operations; docs/api.md lists them.
 */
import type { StarlingNode } from '../node.js'
import { registerNodeInfoOperations } from './node-info.js'
import { registerConnectionOperations } from './connections.js'
import { registerSessionOperations } from './sessions.js'
import { registerSubscriptionOperations } from './subscriptions.js'
import { registerMonitoringControl } from './monitoring-ctl-handlers.js'

export { MONITORING_CTL_COMMANDS } from './monitoring-ctl.js'

/** Registers the monitoring operations on `node.rpc` and their commands on `node.control`. */
export function registerMonitoringOperations (node: StarlingNode): void {
  registerNodeInfoOperations(node)
  registerConnectionOperations(node)
  registerSessionOperations(node)
  registerSubscriptionOperations(node)
  registerMonitoringControl(node)
}

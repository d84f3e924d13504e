/**
 * The cluster part of a node (cluster/cluster.ts), as the composition root builds it: the
 * node starts it after its plugins and stops it before its services. While it runs it
 * serves the `cluster` control commands (cluster/control.ts) and carries node operations
 * to the other members (`cluster.status` answers which nodes run and which are stopped).
 */
import type { NodeComponents } from '../node/node.js'
import { Cluster } from './cluster.js'

export { Cluster, parseNodeAddress, type MemberInfo, type ClusterComponents } from './cluster.js'
export { CLUSTER_CTL_COMMANDS } from './ctl.js'

/** Builds the cluster part of a node from its components (not started). */
export function createCluster (components: NodeComponents): Cluster {
  return new Cluster(components)
}

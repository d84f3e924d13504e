/**
 * The cluster's membership as node operations, for the API (`/api/v3/cluster/...`,
 * api/routes/cluster.ts) and any member that asks: `cluster.members`, `cluster.join`
 * (`{node}`), `cluster.leave` and `cluster.force_leave` (`{node}`). They run the same
 * methods as the `cluster` commands of starling-ctl (cluster/control.ts), and each answers
 * the members as this node then sees them, with the state of its link to each.
 */
import type { NodeRpc } from '../node/rpc.js'
import type { Cluster } from './cluster.js'

/**
 * A member as the API shows it. `link` is this node's link to it: `self` for this node,
 * `up` (linked and admitted: routes and sessions flow), `connecting` (a link is open and the
 * member lists are being swapped) or `down` (no link: the member is stopped or unreachable).
 */
export interface ClusterMember {
  node: string
  /** Its cluster address, `<host>:<port>`. */
  addr: string
  status: 'running' | 'stopped'
  link: 'self' | 'up' | 'connecting' | 'down'
}

const OPERATIONS = ['cluster.members', 'cluster.join', 'cluster.leave', 'cluster.force_leave']

/** What the operations use of the cluster part. */
export type ClusterOperationsPart = Pick<Cluster, 'join' | 'leave' | 'forceLeave' | 'status'> & { mesh: Pick<Cluster['mesh'], 'isUp'> }

/** The members of `cluster` with the state of this node's link to each. */
export function clusterMembers (cluster: ClusterOperationsPart): ClusterMember[] {
  return cluster.status().map((m, i): ClusterMember => ({
    node: m.name,
    addr: m.addr,
    status: m.status,
    link: i === 0 ? 'self' : m.status === 'running' ? 'up' : cluster.mesh.isUp(m.name) ? 'connecting' : 'down'
  }))
}

/** Registers the operations on `rpc`; returns the function that removes them. */
export function registerClusterOperations (rpc: NodeRpc, cluster: ClusterOperationsPart): () => void {
  rpc.register('cluster.members', () => clusterMembers(cluster))
  rpc.register('cluster.join', async (args: { node: string }) => { await cluster.join(args.node); return clusterMembers(cluster) })
  rpc.register('cluster.leave', async () => { await cluster.leave(); return clusterMembers(cluster) })
  rpc.register('cluster.force_leave', async (args: { node: string }) => { await cluster.forceLeave(args.node); return clusterMembers(cluster) })
  return () => { for (const name of OPERATIONS) rpc.unregister(name) }
}

/**
 * The cluster-wide side of the monitoring resources, shared by the API handlers and the
 * CLI: every function takes the node's RPC and runs per-node operations through it, so a
 * list covers every running node (each item carrying its `node`) and a `/nodes/:node/...`
 * read runs on that node. On a single node every call is local.
 *
 * A cluster-wide list is a {@link ClusterList}: the items of the nodes that answered and
 * the nodes that failed (code 101 when one did not answer within the RPC timeout). The API
 * reports the failed ones in `meta.failed`, the CLI prints a line for each.
 */
import type { ClusterList, NodeRpc, PerNode } from '../rpc.js'
import { ClientOfflineError } from '../errors.js'
import { formatBytes, type BrokerInfo, type NodeMonitoring } from './node-info.js'

export type { ClusterList, FailedNode, PerNode } from '../rpc.js'

/** `node_status` of a member of the cluster that is not running (EMQ X's `stopped_node_info`). */
export const STOPPED_STATUS = 'Stopped'

/** A stopped member in `GET /brokers/`. */
export interface StoppedBroker {
  node: string
  node_status: typeof STOPPED_STATUS
}

/** A stopped member in `GET /nodes/`: EMQ X 4.3's `#{name, node_status => 'Stopped'}`, with `node`. */
export interface StoppedNode extends StoppedBroker {
  name: string
}

/** Every running node's items of list operation `op`, each with its `node`, in node order. */
export async function clusterItems<T extends object> (rpc: NodeRpc, op: string, args: object = {}): Promise<ClusterList<T & { node: string }>> {
  return await rpc.mergeAll<T>(op, args)
}

/** The items of list operation `op` on `node` (404 with the running nodes for an unknown one). */
export async function nodeItems<T> (rpc: NodeRpc, node: string, op: string, args: object = {}): Promise<T[]> {
  return await rpc.call<T[]>(node, op, args)
}

/** Every running node's answer to `op`, by node, and the nodes that failed. */
export async function perNode<T> (rpc: NodeRpc, op: string, args: object = {}): Promise<ClusterList<PerNode<T>>> {
  return await rpc.gather<T>(op, args)
}

/** `list` with each item mapped by `fn`; the failed nodes unchanged. */
export function mapList<T, U> (list: ClusterList<T>, fn: (item: T) => U): ClusterList<U> {
  return { items: list.items.map(fn), failed: list.failed }
}

/**
 * `GET /brokers/`: every running node's Node (cluster info), then each stopped member as
 * `{node, node_status: 'Stopped'}`. EMQ X 4 listed only running nodes here; DESIGN.md's
 * dashboards poll this list for every node's status, so the stopped ones are in it too.
 */
export async function listBrokers (rpc: NodeRpc): Promise<ClusterList<BrokerInfo | StoppedBroker>> {
  const running = mapList(await perNode<BrokerInfo>(rpc, 'brokers.info'), a => a.result)
  const stopped = rpc.stoppedNodes().map((node): StoppedBroker => ({ node, node_status: STOPPED_STATUS }))
  return { items: [...running.items, ...stopped], failed: running.failed }
}

/** `GET /brokers/:node`: one node's Node object, without `node` (the spec's single form). */
export async function lookupBroker (rpc: NodeRpc, node: string): Promise<Omit<BrokerInfo, 'node'>> {
  const { node: _name, ...info } = await rpc.call<BrokerInfo>(node, 'brokers.info')
  return info
}

/**
 * `GET /nodes/`: every running node's monitoring data, memory as text with a unit
 * (`76.45M`), then each stopped member as `{node, name, node_status: 'Stopped'}` (EMQ X
 * 4.3's `stopped_node_info`).
 */
export async function listNodes (rpc: NodeRpc): Promise<ClusterList<NodeMonitoring | StoppedNode>> {
  const running = mapList(await perNode<NodeMonitoring>(rpc, 'nodes.info'), ({ result }): NodeMonitoring => ({
    ...result,
    memory_total: formatBytes(Number(result.memory_total)),
    memory_used: formatBytes(Number(result.memory_used))
  }))
  const stopped = rpc.stoppedNodes().map((node): StoppedNode => ({ node, name: node, node_status: STOPPED_STATUS }))
  return { items: [...running.items, ...stopped], failed: running.failed }
}

/** `GET /nodes/:node`: one node's monitoring data, memory in bytes. */
export async function lookupNode (rpc: NodeRpc, node: string): Promise<NodeMonitoring> {
  return await rpc.call<NodeMonitoring>(node, 'nodes.info')
}

/**
 * Kicks `clientid` out wherever it is connected. Every node is asked (the client registry
 * keeps an id on one node, so at most one kicks); 112 when no node had it.
 */
export async function kickClient (rpc: NodeRpc, clientid: string): Promise<void> {
  const answers = await rpc.callAll<boolean>('connections.kick', { clientid })
  if (answers.some(a => a.ok && a.result)) return
  const failed = answers.filter(a => !a.ok).map(a => a.node)
  const unreachable = failed.length > 0 ? ` (nodes that did not answer: ${failed.join(', ')})` : ''
  throw new ClientOfflineError(`client ${clientid} is not online${unreachable}`)
}

/**
 * The cluster-wide side of the monitoring resources, shared by the API handlers and the
 * CLI: every function takes the node's RPC and runs per-node operations through it, so a
 * list covers every running node (each item carrying its `node`) and a `/nodes/:node/...`
 * read runs on that node. On a single node every call is local.
 */
import type { NodeRpc } from '../rpc.js'
import { ApiError, CODES } from '../errors.js'
import { formatBytes, type BrokerInfo, type NodeMonitoring } from './node-info.js'

/** One node's answer to a per-node read, in the cluster form. */
export interface PerNode<T> {
  node: string
  result: T
}

/** Every running node's items of list operation `op`, each with its `node`, in node order. */
export async function clusterItems<T extends object> (rpc: NodeRpc, op: string, args: object = {}): Promise<Array<T & { node: string }>> {
  return (await rpc.mergeAll<T>(op, args)).items
}

/** The items of list operation `op` on `node` (404 with the running nodes for an unknown one). */
export async function nodeItems<T> (rpc: NodeRpc, node: string, op: string, args: object = {}): Promise<T[]> {
  return await rpc.call<T[]>(node, op, args)
}

/**
 * Every running node's answer to `op`, by node. Nodes that fail are left out, unless every
 * node failed: then the first error is thrown (as {@link NodeRpc.mergeAll} does).
 */
export async function perNode<T> (rpc: NodeRpc, op: string, args: object = {}): Promise<Array<PerNode<T>>> {
  const answers = await rpc.callAll<T>(op, args)
  const out: Array<PerNode<T>> = []
  for (const answer of answers) if (answer.ok) out.push({ node: answer.node, result: answer.result })
  const failed = answers.find(a => !a.ok)
  if (out.length === 0 && failed !== undefined && !failed.ok) throw failed.error
  return out
}

/** `GET /brokers/`: every node's Node (cluster info). */
export async function listBrokers (rpc: NodeRpc): Promise<BrokerInfo[]> {
  return (await perNode<BrokerInfo>(rpc, 'brokers.info')).map(a => a.result)
}

/** `GET /brokers/:node`: one node's Node object, without `node` (the spec's single form). */
export async function lookupBroker (rpc: NodeRpc, node: string): Promise<Omit<BrokerInfo, 'node'>> {
  const { node: _name, ...info } = await rpc.call<BrokerInfo>(node, 'brokers.info')
  return info
}

/** `GET /nodes/`: every node's monitoring data, memory as text with a unit (`76.45M`). */
export async function listNodes (rpc: NodeRpc): Promise<NodeMonitoring[]> {
  return (await perNode<NodeMonitoring>(rpc, 'nodes.info')).map(({ result }) => ({
    ...result,
    memory_total: formatBytes(Number(result.memory_total)),
    memory_used: formatBytes(Number(result.memory_used))
  }))
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
  throw new ApiError(CODES.CLIENT_OFFLINE, `client ${clientid} is not online${unreachable}`)
}

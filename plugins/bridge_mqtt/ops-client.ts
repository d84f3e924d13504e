/**
 * How the `bridges` commands, the `/api/v3/.../bridges` endpoints and the bridges' `$SYS`
 * publisher call the bridge operations (docs/bridges.md). svc_bridge_mqtt registers the
 * operations on `node.rpc` while it is loaded; this module only calls them by name, so the
 * control surfaces do not depend on the plugin's code. While the plugin is not loaded on a
 * node the operations do not exist there: every call answers {@link bridgePluginNotLoaded}
 * (code 102, HTTP 400) instead of the RPC's "unknown node operation", and the cluster-wide
 * list counts that node as having no bridges.
 *
 * Inputs are checked here, before any node is asked: a topic filter that is not one is 115, a
 * QoS other than 0, 1 or 2 is 116, a missing name or topic 107.
 */
import type { StarlingConfig } from '../../node/config/index.js'
import { ApiError, BadQosError, BadTopicError, MissingParameterError, NotFoundError, RefusedError, toApiError } from '../../node/errors.js'
import { filterError, parseShared } from '../../node/mqtt/topic.js'
import { failedNode, type ClusterList, type FailedNode, type NodeRpc } from '../../node/rpc.js'
import type { BridgeInfo } from './types.js'

/** The plugin that registers the operations. */
export const BRIDGE_PLUGIN = 'svc_bridge_mqtt'

/** The operations svc_bridge_mqtt registers (names and argument shapes fixed in docs/bridges.md). */
export const BRIDGE_OPS = {
  list: 'bridges.list',
  start: 'bridges.start',
  stop: 'bridges.stop',
  forwards: 'bridges.forwards',
  addForward: 'bridges.forwards.add',
  delForward: 'bridges.forwards.del',
  subscriptions: 'bridges.subscriptions',
  addSubscription: 'bridges.subscriptions.add',
  delSubscription: 'bridges.subscriptions.del'
} as const

/** One remote subscription of an MQTT bridge. */
export interface BridgeSubscription { topic: string, qos: number }

/** What the operations take from the node that runs the request. */
export interface BridgeOpsNode {
  readonly rpc: NodeRpc
  readonly config: Pick<StarlingConfig, 'mqtt.max_topic_levels'>
}

/** The answer while svc_bridge_mqtt is not loaded on `node`. */
export function bridgePluginNotLoaded (node: string): ApiError {
  return new RefusedError(`plugin ${BRIDGE_PLUGIN} is not loaded on ${node}; load it first with \`starling-ctl plugins load ${BRIDGE_PLUGIN}\``)
}

/**
 * True for the answer of a bridge operation while the plugin is not loaded: the RPC's
 * "unknown node operation" (a node whose plugin list lacks svc_bridge_mqtt, or a remote
 * node's relayed as 101), or the refusal the plugin registers in its place while unloaded.
 */
export function isNotLoaded (err: unknown): boolean {
  const message = (err as { message?: unknown } | null)?.message
  return typeof message === 'string' && (
    message.includes('unknown node operation bridges.') ||
    message.includes(`plugin ${BRIDGE_PLUGIN} is not loaded`) ||
    message.includes(`load ${BRIDGE_PLUGIN} first`))
}

/** Runs bridge operation `op` on `node`; the plugin's absence becomes {@link bridgePluginNotLoaded}. */
export async function callBridges<T> (rpc: NodeRpc, node: string, op: string, args: object = {}): Promise<T> {
  try {
    return await rpc.call<T>(node, op, args)
  } catch (err) {
    if (isNotLoaded(err)) throw bridgePluginNotLoaded(node)
    throw err
  }
}

/** This node's bridges, `[]` while the plugin is not loaded (the `$SYS` publisher's read). */
export async function localBridges (rpc: NodeRpc): Promise<BridgeInfo[]> {
  try {
    return await rpc.local(BRIDGE_OPS.list, {}) as BridgeInfo[]
  } catch (err) {
    if (isNotLoaded(err)) return []
    throw err
  }
}

/** 107 unless `value` is a non-empty string. */
function required (what: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new MissingParameterError(`missing parameter ${what}`)
  return value
}

function maxLevels (config: BridgeOpsNode['config']): number {
  return config['mqtt.max_topic_levels'] > 0 ? config['mqtt.max_topic_levels'] : 0
}

/**
 * Throws 115 unless `topic` is a local topic filter a bridge can forward: a valid filter
 * within `mqtt.max_topic_levels`, not a shared subscription (a forward sees every message).
 */
export function checkForwardTopic (config: BridgeOpsNode['config'], topic: unknown): string {
  const filter = required('topic', topic)
  const problem = filterError(filter, maxLevels(config))
  if (problem !== null) throw new BadTopicError(`bad topic filter ${JSON.stringify(filter)}: ${problem}`)
  if (filter.startsWith('$share/') || filter.startsWith('$queue/')) {
    throw new BadTopicError(`bad topic filter ${JSON.stringify(filter)}: a forward cannot be a shared subscription`)
  }
  return filter
}

/** Throws 115 unless `topic` is a filter a bridge can subscribe to at the remote (shared ones included). */
export function checkSubscriptionTopic (config: BridgeOpsNode['config'], topic: unknown): string {
  const filter = required('topic', topic)
  const bad = (why: string): ApiError => new BadTopicError(`bad topic filter ${JSON.stringify(filter)}: ${why}`)
  let real = filter
  try {
    real = parseShared(filter)?.filter ?? filter
  } catch (err) {
    throw bad((err as Error).message)
  }
  const problem = filterError(real, maxLevels(config))
  if (problem !== null) throw bad(problem)
  return filter
}

/** 116 unless `qos` is 0, 1 or 2 (a number, or its text as the CLI gives it). */
export function checkQos (qos: unknown): 0 | 1 | 2 {
  const n = typeof qos === 'string' && /^[0-2]$/.test(qos) ? Number(qos) : qos
  if (n !== 0 && n !== 1 && n !== 2) throw new BadQosError(`qos must be 0, 1 or 2, not ${JSON.stringify(qos)}`)
  return n
}

/** `GET /nodes/:node/bridges`, `bridges list`: the bridges of `node`, by name. */
export async function nodeBridges (rpc: NodeRpc, node: string): Promise<BridgeInfo[]> {
  const list = await callBridges<BridgeInfo[]>(rpc, node, BRIDGE_OPS.list)
  return [...list].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
}

/** `GET /nodes/:node/bridges/:name`: one bridge; 404 naming the known ones. */
export async function nodeBridge (rpc: NodeRpc, node: string, name: string): Promise<BridgeInfo> {
  const list = await nodeBridges(rpc, node)
  const found = list.find(b => b.name === name)
  if (found === undefined) {
    const known = list.length === 0 ? 'none' : list.map(b => b.name).join(', ')
    throw new NotFoundError(`bridge ${name}`, `bridges on ${node}: ${known}`)
  }
  return found
}

/**
 * `GET /api/v3/bridges`: every running node's bridges, each with its `node`, in node order.
 * A node without the plugin has no bridges (it is not a failure); a node that does not
 * answer is in `failed`. Throws the first error when no node answered.
 */
export async function clusterBridges (rpc: NodeRpc): Promise<ClusterList<BridgeInfo & { node: string }>> {
  const answers = await rpc.callAll<BridgeInfo[]>(BRIDGE_OPS.list)
  const items: Array<BridgeInfo & { node: string }> = []
  const failed: FailedNode[] = []
  let answered = 0
  for (const answer of answers) {
    if (answer.ok) {
      answered++
      const sorted = [...answer.result].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
      for (const b of sorted) items.push({ ...b, node: answer.node })
    } else if (isNotLoaded(answer.error)) {
      answered++
    } else {
      failed.push(failedNode(answer.node, answer.error))
    }
  }
  const first = answers.find(a => !a.ok && !isNotLoaded(a.error))
  if (answered === 0 && first !== undefined && !first.ok) throw toApiError(first.error)
  return { items, failed }
}

/** Starts bridge `name` on `node`: true when it started, false when it already ran. */
export async function startBridge (rpc: NodeRpc, node: string, name: unknown): Promise<boolean> {
  return await callBridges<boolean>(rpc, node, BRIDGE_OPS.start, { name: required('name', name) })
}

/** Stops bridge `name` on `node`: true when it stopped, false when it was not running. */
export async function stopBridge (rpc: NodeRpc, node: string, name: unknown): Promise<boolean> {
  return await callBridges<boolean>(rpc, node, BRIDGE_OPS.stop, { name: required('name', name) })
}

/** The forwards (local topic filters sent to the remote) of bridge `name`. */
export async function bridgeForwards (rpc: NodeRpc, node: string, name: unknown): Promise<string[]> {
  return await callBridges<string[]>(rpc, node, BRIDGE_OPS.forwards, { name: required('name', name) })
}

/** Adds a forward to bridge `name` (kept across restarts by the plugin). */
export async function addBridgeForward (n: BridgeOpsNode, node: string, name: unknown, topic: unknown): Promise<void> {
  const args = { name: required('name', name), topic: checkForwardTopic(n.config, topic) }
  await callBridges(n.rpc, node, BRIDGE_OPS.addForward, args)
}

/** Removes a forward of bridge `name`. */
export async function delBridgeForward (n: BridgeOpsNode, node: string, name: unknown, topic: unknown): Promise<void> {
  await callBridges(n.rpc, node, BRIDGE_OPS.delForward, { name: required('name', name), topic: required('topic', topic) })
}

/** The remote subscriptions of bridge `name`. */
export async function bridgeSubscriptions (rpc: NodeRpc, node: string, name: unknown): Promise<BridgeSubscription[]> {
  return await callBridges<BridgeSubscription[]>(rpc, node, BRIDGE_OPS.subscriptions, { name: required('name', name) })
}

/** Subscribes bridge `name` to `topic` at the remote with `qos`. */
export async function addBridgeSubscription (n: BridgeOpsNode, node: string, name: unknown, topic: unknown, qos: unknown): Promise<void> {
  const args = { name: required('name', name), topic: checkSubscriptionTopic(n.config, topic), qos: checkQos(qos) }
  await callBridges(n.rpc, node, BRIDGE_OPS.addSubscription, args)
}

/** Removes the remote subscription `topic` of bridge `name`. */
export async function delBridgeSubscription (n: BridgeOpsNode, node: string, name: unknown, topic: unknown): Promise<void> {
  await callBridges(n.rpc, node, BRIDGE_OPS.delSubscription, { name: required('name', name), topic: required('topic', topic) })
}

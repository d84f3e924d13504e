/**
 * What one node says about itself: the spec's Node (cluster info) and Node monitoring data,
 * its listeners, metrics, stats and alarms. Each is a node operation (`brokers.info`,
 * `nodes.info`, `listeners.list`, `metrics.get`, `stats.get`, `alarms.present`,
 * `alarms.history`) returning plain JSON, so the cluster can ask any node for it.
 * Choices where the spec is open are in docs/api.md (Cluster and nodes).
 */
import { loadavg } from 'node:os'
import type { StarlingNode } from '../node.js'
import { VERSION } from '../version.js'
import { SYSDESCR, formatDatetime, formatUptime } from '../sys/sys-info.js'
import { systemProbes } from '../alarms/index.js'
import { metricNames, type Metrics } from '../metrics.js'
import type { StatsSnapshot } from '../stats.js'
import type { ListenerInfo } from '../mqtt/listeners.js'
import type { PresentAlarm, AlarmHistoryEntry } from '../alarms/index.js'

/** The spec's Node (cluster info). The single-node API form leaves out `node`. */
export interface BrokerInfo {
  /** Local time, `YYYY-MM-DD HH:MM:SS`. */
  datetime: string
  node: string
  /** Always `Running`: a node that answers is running. */
  node_status: string
  /** The runtime, `Node.js v20.x.y` (EMQ X reported its Erlang/OTP release here). */
  otp_release: string
  sysdescr: string
  /** EMQ X's words: `2 minutes, 5 seconds`. */
  uptime: string
  /** `v<major>.<minor>.<patch>`. */
  version: string
}

/** The spec's Node monitoring data, single-node form (memory in bytes). */
export interface NodeMonitoring {
  /** Connected MQTT clients. */
  connections: number
  /** Load averages of the machine, two decimals, as text. */
  load1: string
  load5: string
  load15: string
  /** Soft limit of open files (`Max open files`); 0 when unknown. */
  max_fds: number
  /** Resident memory of the process, bytes (text with a unit in the list form). */
  memory_total: number | string
  /** JS heap in use plus memory held outside it (Buffers), bytes (text in the list form). */
  memory_used: number | string
  /** The node name, as EMQ X repeated it. */
  name: string
  node: string
  node_status: string
  otp_release: string
  /** File descriptors this process may open (same limit as `max_fds`). */
  process_available: number
  /** File descriptors open now; 0 when unknown. */
  process_used: number
  uptime: string
  version: string
}

/**
 * What the node info functions use of the node: its name, start time and MQTT core (Node
 * and Node monitoring data), its listeners and those of the parts (listener board).
 * `metricsOf` takes the node's metrics alone.
 */
export type NodeInfoComponents = Pick<StarlingNode, 'name' | 'startedAt' | 'broker' | 'listeners' | 'listenerBoard'>

/** `Running`: EMQ X's node_status of a node that answers. */
export const NODE_STATUS = 'Running'

/** The runtime the node runs on, reported as `otp_release`. */
export const OTP_RELEASE = `Node.js ${process.version}`

/**
 * Bytes as EMQ X's `kmg` wrote them in the nodes list: two decimals and `G`, `M` or `K`
 * above each unit (`1.45G`, `76.45M`), plain bytes with `B` below a kilobyte.
 */
export function formatBytes (bytes: number): string {
  const units: Array<[number, string]> = [[1024 ** 3, 'G'], [1024 ** 2, 'M'], [1024, 'K']]
  for (const [size, unit] of units) if (bytes > size) return (bytes / size).toFixed(2) + unit
  return `${bytes}B`
}

/** This node's Node (cluster info) object. */
export function brokerInfo (node: NodeInfoComponents): BrokerInfo {
  return {
    datetime: formatDatetime(),
    node: node.name,
    node_status: NODE_STATUS,
    otp_release: OTP_RELEASE,
    sysdescr: SYSDESCR,
    uptime: formatUptime(Date.now() - node.startedAt),
    version: VERSION
  }
}

/** This node's monitoring data, memory in bytes (the single-node form). */
export function nodeMonitoring (node: NodeInfoComponents): NodeMonitoring {
  const fds = systemProbes.fileDescriptors()
  const limit = fds !== null && Number.isFinite(fds.limit) ? fds.limit : 0
  const [load1, load5, load15] = loadavg().map(l => l.toFixed(2))
  const memory = process.memoryUsage()
  return {
    connections: node.broker.core.clientCount,
    load1,
    load5,
    load15,
    max_fds: limit,
    memory_total: memory.rss,
    memory_used: memory.heapUsed + memory.external,
    name: node.name,
    node: node.name,
    node_status: NODE_STATUS,
    otp_release: OTP_RELEASE,
    process_available: limit,
    process_used: fds?.open ?? 0,
    uptime: formatUptime(Date.now() - node.startedAt),
    version: VERSION
  }
}

/** The node's listeners: the MQTT ones, then those the parts above report (`http:management` while svc_management runs). */
export function listenersOf (node: NodeInfoComponents): ListenerInfo[] {
  return [...node.listeners.map(l => l.info()), ...node.listenerBoard.list()]
}

/** The node's metrics (`node.metrics`): every spec counter, in the spec's order, then those plugins added. */
export function metricsOf (metrics: Metrics): Metrics {
  const out = {} as Metrics
  for (const name of metricNames(metrics)) out[name] = metrics[name]
  return out
}

/** Registers the node-level operations on `node.rpc`. */
export function registerNodeInfoOperations (node: StarlingNode): void {
  const rpc = node.rpc
  rpc.register('brokers.info', (): BrokerInfo => brokerInfo(node))
  rpc.register('nodes.info', (): NodeMonitoring => nodeMonitoring(node))
  rpc.register('listeners.list', (): ListenerInfo[] => listenersOf(node))
  rpc.register('metrics.get', (): Metrics => metricsOf(node.metrics))
  rpc.register('stats.get', (): StatsSnapshot => node.services.stats.snapshot())
  rpc.register('alarms.present', (): PresentAlarm[] => node.services.alarms.present())
  rpc.register('alarms.history', (): AlarmHistoryEntry[] => node.services.alarms.history())
}

/**
 * The monitor's endpoints on the dashboard listener (EMQ X 4's `/monitor/...` of
 * emqx_dashboard), and the node operations behind them. Each node answers for itself
 * (`monitor.counters`, `monitor.current`, registered while svc_dashboard is loaded); the
 * endpoints ask every running node through the node's RPC, as `/stats/` and `/metrics/` do,
 * and sum the answers, so any node serves the cluster's history:
 *
 * - `GET /monitor/counters?range=1h|1d[&node=<name>]`: `{interval, series: {received, sent,
 *   dropped, connections, subscriptions}}`, each series `[[time ms, value], ...]`, oldest
 *   first; without `node`, every running node's samples summed at the same times (a node
 *   that has no sample at a time adds nothing there). `range` defaults to `1h`.
 * - `GET /monitor/current_metrics`: the cluster now: connections, subscriptions, topics,
 *   retained and the latest per-second rates.
 *
 * Nodes that fail their part (svc_dashboard unloaded there, no answer) are in `meta.failed`.
 */
import { defineRoutes, type RouteDef } from '../../api/route-table.js'
import { WrongTypeError } from '../../node/errors.js'
import type { NodeRpc, PerNode } from '../../node/rpc.js'
import { isMonitorRange, MONITOR_RANGES, SAMPLE_FIELDS, type Monitor, type MonitorHistory, type MonitorRange } from './monitor.js'

/** The operation answering one node's history of a window. */
export const MONITOR_COUNTERS_OP = 'monitor.counters'
/** The operation answering one node's figures now. */
export const MONITOR_CURRENT_OP = 'monitor.current'

/** The `data` of `GET /monitor/counters`: what dashboard/src/pages/Overview.vue reads. */
export interface MonitorCounters {
  /** Seconds between samples. */
  interval: number
  series: Record<typeof SAMPLE_FIELDS[number], Array<[number, number]>>
}

/** One node's figures now, and the cluster's (`nodes`: how many answered). */
export interface CurrentMetrics {
  connections: number
  subscriptions: number
  /** Topic filters routed by the node (the stats' `topics/count`); summed, a filter subscribed on two nodes counts twice. */
  topics: number
  /** Retained messages; every node keeps the cluster's, so the cluster's figure is the largest. */
  retained: number
  /** Per second, over the latest 10 s sample (0 before the first). */
  received: number
  sent: number
  dropped: number
}

/** What the operations read on the node. */
export interface MonitorOpsComponents {
  rpc: Pick<NodeRpc, 'register' | 'unregister'>
  monitor: Monitor
  /** The node's stats now: `connections/count`, `subscriptions/count`, `topics/count`, `retained/count`. */
  stats: () => Readonly<Record<string, number>>
}

/** Registers this node's monitor operations; returns their removal (at unload). */
export function registerMonitorOperations (c: MonitorOpsComponents): () => void {
  c.rpc.register(MONITOR_COUNTERS_OP, (args: { range?: unknown }): MonitorHistory =>
    c.monitor.history(isMonitorRange(args?.range) ? args.range : '1h'))
  c.rpc.register(MONITOR_CURRENT_OP, (): CurrentMetrics => {
    const s = c.stats()
    const last = c.monitor.latest()
    return {
      connections: s['connections/count'] ?? 0,
      subscriptions: s['subscriptions/count'] ?? 0,
      topics: s['topics/count'] ?? 0,
      retained: s['retained/count'] ?? 0,
      received: last?.[1] ?? 0,
      sent: last?.[2] ?? 0,
      dropped: last?.[3] ?? 0
    }
  })
  return () => {
    c.rpc.unregister(MONITOR_COUNTERS_OP)
    c.rpc.unregister(MONITOR_CURRENT_OP)
  }
}

/**
 * The nodes' histories summed at each time (times in order). The interval is the first
 * node's: every node of one release samples at the same one.
 */
export function sumHistories (histories: readonly MonitorHistory[]): MonitorCounters {
  const byTime = new Map<number, number[]>()
  for (const h of histories) {
    for (const [t, ...values] of h.samples) {
      const sum = byTime.get(t)
      if (sum === undefined) byTime.set(t, [...values])
      else for (let i = 0; i < values.length; i++) sum[i] = Math.round((sum[i] + values[i]) * 100) / 100
    }
  }
  const times = [...byTime.keys()].sort((x, y) => x - y)
  const series = Object.fromEntries(SAMPLE_FIELDS.map((name, i) =>
    [name, times.map((t): [number, number] => [t, byTime.get(t)![i]])])) as MonitorCounters['series']
  return { interval: histories[0]?.interval ?? 0, series }
}

/** The cluster's figures from each node's. */
export function sumCurrent (items: ReadonlyArray<PerNode<CurrentMetrics>>): CurrentMetrics & { nodes: number } {
  const out = { nodes: items.length, connections: 0, subscriptions: 0, topics: 0, retained: 0, received: 0, sent: 0, dropped: 0 }
  for (const { result: r } of items) {
    out.connections += r.connections
    out.subscriptions += r.subscriptions
    out.topics += r.topics
    out.retained = Math.max(out.retained, r.retained)
    out.received = Math.round((out.received + r.received) * 100) / 100
    out.sent = Math.round((out.sent + r.sent) * 100) / 100
    out.dropped = Math.round((out.dropped + r.dropped) * 100) / 100
  }
  return out
}

/** `range` of the query: default 1h; anything else but a window's name is 108. */
function rangeOf (value: string | undefined): MonitorRange {
  if (value === undefined) return '1h'
  if (!isMonitorRange(value)) throw new WrongTypeError(`range must be one of ${MONITOR_RANGES.join(', ')}, got '${value}'`)
  return value
}

/** The monitor's routes (part of the dashboard's own route table). */
export function monitorRoutes (): RouteDef[] {
  return defineRoutes([
    {
      name: 'monitor_counters',
      method: 'GET',
      path: '/monitor/counters',
      descr: 'History of messages received/sent/dropped per second, connections and subscriptions (?range=1h|1d, ?node=): the cluster\'s, summed by time, unless a node is named',
      handler: async (req) => {
        const range = rangeOf(req.query.range)
        const node = req.query.node
        if (node !== undefined) return { data: sumHistories([await req.node.rpc.call<MonitorHistory>(node, MONITOR_COUNTERS_OP, { range })]) }
        const { items, failed } = await req.node.rpc.gather<MonitorHistory>(MONITOR_COUNTERS_OP, { range })
        return { data: sumHistories(items.map(i => i.result)), failed }
      }
    },
    {
      name: 'monitor_current_metrics',
      method: 'GET',
      path: '/monitor/current_metrics',
      descr: 'The cluster now: connections, subscriptions, topics, retained, and messages received/sent/dropped per second of the latest sample',
      handler: async (req) => {
        const { items, failed } = await req.node.rpc.gather<CurrentMetrics>(MONITOR_CURRENT_OP)
        return { data: sumCurrent(items), failed }
      }
    }
  ])
}

/**
 * The bridges' `$SYS` topics and metrics (docs/sys-topics.md, "Bridges"). EMQ X 4.4 published
 * nothing about its bridges; Starling adds, with no coupling to svc_bridge_mqtt beyond its
 * `bridges.list` operation:
 *
 * - every `broker.sys_interval`, per bridge of this node:
 *   `$SYS/brokers/<node>/bridges/<name>/status` (`connected`, `connecting`, `stopped`) and
 *   `.../sent`, `.../received`, `.../buffered`, `.../dropped` (integers as text; QoS 0, not
 *   retained, as the node's other periodic topics);
 * - the node metrics `bridge.mqtt.sent`, `bridge.mqtt.received`, `bridge.mqtt.dropped`: the
 *   bridges' counts summed, sampled every {@link BRIDGE_METRICS_SAMPLE_MS} (and before each
 *   `$SYS` round). A counter only grows: each sample adds what each bridge counted since the
 *   previous one (a bridge whose count went down was restarted with the plugin: all of its
 *   new count is added). What a bridge counts after the last sample before the plugin unloads
 *   is not added.
 */
import type { Logger } from '../../node/logger.js'
import { addMetrics, type Metrics } from '../../node/metrics.js'
import type { NodeRpc } from '../../node/rpc.js'
import { publishSys, sysTopicPrefix, isTopicSafe, type SysPublishTarget } from '../../node/sys/sys-publish.js'
import { localBridges } from './ops-client.js'
import type { BridgeInfo } from './types.js'

/** How often the bridge metrics are brought up to date. */
export const BRIDGE_METRICS_SAMPLE_MS = 1000

/** The per-bridge `$SYS` leaves, in publishing order. */
export const BRIDGE_SYS_LEAVES = ['status', 'sent', 'received', 'buffered', 'dropped'] as const

/** The counts that feed node metrics, and the metric each feeds. */
const METRIC_OF = {
  sent: 'bridge.mqtt.sent',
  received: 'bridge.mqtt.received',
  dropped: 'bridge.mqtt.dropped'
} as const

/** The node metrics svc_bridge_mqtt adds (listed after the core's while the node runs). */
export const BRIDGE_METRIC_NAMES: readonly string[] = Object.values(METRIC_OF)

/** What the publisher uses of the node. */
export interface BridgesSysNode {
  readonly name: string
  readonly config: { readonly 'broker.sys_interval': number }
  readonly broker: SysPublishTarget['broker']
  readonly rpc: NodeRpc
  readonly metrics: Metrics
  readonly logger: Logger
}

/** The bridges' `$SYS` publisher and metrics sampler. */
export interface BridgesSys {
  start: () => void
  stop: () => void
  /** Publishes the per-bridge topics now (after a metrics sample). */
  tick: () => Promise<void>
  /** Adds what the bridges counted since the last sample to the node metrics. */
  sample: () => Promise<BridgeInfo[]>
}

/** `$SYS/brokers/<node>/bridges/<name>/<leaf>` topics and payloads of one bridge. */
export function bridgeSysMessages (node: string, bridge: BridgeInfo): Array<[topic: string, payload: string]> {
  const base = `${sysTopicPrefix(node)}bridges/${bridge.name}/`
  return BRIDGE_SYS_LEAVES.map(leaf => [base + leaf, String(bridge[leaf])])
}

/** Creates the publisher and adds the bridge metrics (at zero); nothing runs until `start()`; `stop()` removes them. */
export function createBridgesSys (node: BridgesSysNode): BridgesSys {
  const logger = node.logger.child({ component: 'bridges-sys' })
  const target = { broker: node.broker, logger }
  const timers: Array<ReturnType<typeof setInterval>> = []
  /** Last counts seen per bridge. */
  const last = new Map<string, Record<keyof typeof METRIC_OF, number>>()

  /** Samples run one after the other, so an older read never lands after a newer one. */
  let queue: Promise<unknown> = Promise.resolve()

  async function sample (): Promise<BridgeInfo[]> {
    const next = queue.then(sampleNow, sampleNow)
    queue = next.catch(() => undefined)
    return await next
  }

  async function sampleNow (): Promise<BridgeInfo[]> {
    const bridges = await localBridges(node.rpc)
    const seen = new Set<string>()
    for (const b of bridges) {
      seen.add(b.name)
      const before = last.get(b.name)
      const now = { sent: b.sent, received: b.received, dropped: b.dropped }
      for (const key of Object.keys(METRIC_OF) as Array<keyof typeof METRIC_OF>) {
        const value = Number.isFinite(now[key]) ? now[key] : 0
        const previous = before?.[key] ?? 0
        node.metrics[METRIC_OF[key]] += value >= previous ? value - previous : value
      }
      last.set(b.name, now)
    }
    for (const name of [...last.keys()]) if (!seen.has(name)) last.delete(name)
    return bridges
  }

  async function tick (): Promise<void> {
    const bridges = await sample()
    for (const bridge of bridges) {
      if (!isTopicSafe(bridge.name) || bridge.name.includes('/')) continue
      for (const [topic, payload] of bridgeSysMessages(node.name, bridge)) publishSys(target, topic, payload)
    }
  }

  function every (ms: number, fn: () => Promise<unknown>): void {
    if (ms <= 0) return
    let running = false
    const timer = setInterval(() => {
      if (running) return
      running = true
      fn().catch((err) => logger.warn({ err }, 'bridges $SYS round failed')).finally(() => { running = false })
    }, ms)
    timer.unref?.()
    timers.push(timer)
  }

  // the node metrics these feed, listed after the core's until stop()
  let removeMetrics: (() => void) | undefined = addMetrics(node.metrics, BRIDGE_METRIC_NAMES)
  return {
    tick,
    sample,
    start () {
      if (timers.length > 0) return
      every(BRIDGE_METRICS_SAMPLE_MS, sample)
      every(node.config['broker.sys_interval'], tick)
    },
    stop () {
      for (const timer of timers.splice(0)) clearInterval(timer)
      removeMetrics?.()
      removeMetrics = undefined
    }
  }
}

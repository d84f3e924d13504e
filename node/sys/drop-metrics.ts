/**
 * The metrics of messages the broker gives up on, by the reason `message.dropped` carries
 * (EMQ X's meanings):
 *
 * - `messages/expired`: a message whose MQTT 5 Message Expiry Interval elapsed before it
 *   could be delivered (reason `expired`);
 * - `messages/qos2/expired`: an incoming QoS 2 message whose PUBREL did not come within
 *   `mqtt.await_rel_timeout` (reason `await_rel_timeout`);
 * - `messages/qos2/dropped`: an incoming QoS 2 message refused because
 *   `mqtt.max_awaiting_rel` messages already wait for their PUBREL (reason `awaiting_rel_full`).
 *
 * `messages/dropped` itself is counted by the broker for every reason. `messages/forward`
 * belongs to the cluster (messages sent to another node) and is not counted here.
 */
import type { HooksBus } from '../hooks.js'
import type { Metrics, MetricName } from '../metrics.js'
import type { NodeService } from './sys-publisher.js'

/** The metric each drop reason adds to, beside `messages/dropped`. */
export const DROP_REASON_METRIC: Readonly<Record<string, MetricName>> = {
  expired: 'messages/expired',
  await_rel_timeout: 'messages/qos2/expired',
  awaiting_rel_full: 'messages/qos2/dropped'
}

/** Counts one drop by its reason; reasons without a metric of their own change nothing. */
export function countDropReason (metrics: Metrics, reason: string): void {
  const metric = DROP_REASON_METRIC[reason]
  if (metric !== undefined) metrics[metric]++
}

/**
 * Counts the reasons above from the hooks bus. (The broker could call
 * {@link countDropReason} where it drops instead, which spares building the event.)
 */
export function createDropMetrics (node: { hooks: HooksBus, metrics: Metrics }): NodeService {
  let off: (() => void) | null = null
  return {
    start () {
      off ??= node.hooks.on('message.dropped', (e) => countDropReason(node.metrics, e.reason))
    },
    stop () {
      off?.()
      off = null
    }
  }
}

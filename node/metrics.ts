/**
 * The node's metrics: integer counters with the spec's names (section "Metrics").
 * Counters only grow; they are read by the API, `$SYS/brokers/<node>/metrics/<name>` and the CLI.
 */
export const METRIC_NAMES = [
  'bytes/received', 'bytes/sent',
  'packets/received', 'packets/sent',
  'packets/connect', 'packets/connack',
  'packets/publish/received', 'packets/publish/sent',
  'packets/puback/received', 'packets/puback/sent', 'packets/puback/missed',
  'packets/pubrec/received', 'packets/pubrec/sent', 'packets/pubrec/missed',
  'packets/pubrel/received', 'packets/pubrel/sent', 'packets/pubrel/missed',
  'packets/pubcomp/received', 'packets/pubcomp/sent', 'packets/pubcomp/missed',
  'packets/subscribe', 'packets/suback', 'packets/unsubscribe', 'packets/unsuback',
  'packets/pingreq', 'packets/pingresp',
  'packets/disconnect/received', 'packets/disconnect/sent', 'packets/auth',
  'messages/received', 'messages/sent', 'messages/expired', 'messages/retained',
  'messages/dropped', 'messages/forward',
  'messages/qos0/received', 'messages/qos0/sent',
  'messages/qos1/received', 'messages/qos1/sent',
  'messages/qos2/received', 'messages/qos2/sent',
  'messages/qos2/expired', 'messages/qos2/dropped',
  // EMQ X 4.4's auth and ACL counters (beyond the spec's list): docs/auth.md
  'client.auth.success', 'client.auth.failure', 'client.auth.ignore',
  'client.acl.allow', 'client.acl.deny'
] as const

export type MetricName = typeof METRIC_NAMES[number]

/**
 * Counter storage: one numeric slot per metric name of the core, then the counters plugins
 * added ({@link addMetrics}, e.g. svc_bridge_mqtt's `bridge.mqtt.sent`).
 */
export type Metrics = Record<MetricName, number> & Record<string, number>

/**
 * Adds a plugin's counters (zero, unless already there) to the node's metrics: the API,
 * `$SYS/brokers/<node>/metrics/<name>` and the CLI list them after the core's, in the order
 * added. Returns the function that removes them (the plugin unloads or detaches). A plugin's
 * names must not be the core's.
 */
export function addMetrics (metrics: Metrics, names: readonly string[]): () => void {
  const core = new Set<string>(METRIC_NAMES)
  for (const name of names) {
    if (core.has(name)) throw new Error(`metric ${name} is the core's`)
    if (!(name in metrics)) metrics[name] = 0
  }
  return () => { for (const name of names) delete metrics[name] }
}

/** Every metric now, the core's first (in the spec's order), then those added. */
export function metricNames (metrics: Metrics): string[] {
  return Object.keys(metrics)
}

/** Creates a zeroed metrics object (all keys present, so reads never see undefined). */
export function createMetrics (): Metrics {
  const m = {} as Metrics
  for (const name of METRIC_NAMES) m[name] = 0
  return m
}

/** Metric counted when a packet of MQTT control type `type` (1..15) is received. */
export const RECEIVED_PACKET_METRIC: ReadonlyArray<MetricName | null> = [
  null, 'packets/connect', null, 'packets/publish/received', 'packets/puback/received',
  'packets/pubrec/received', 'packets/pubrel/received', 'packets/pubcomp/received',
  'packets/subscribe', null, 'packets/unsubscribe', null, 'packets/pingreq', null,
  'packets/disconnect/received', 'packets/auth'
]

/** Metric counted when a packet of MQTT control type `type` (1..15) is sent. */
export const SENT_PACKET_METRIC: ReadonlyArray<MetricName | null> = [
  null, null, 'packets/connack', 'packets/publish/sent', 'packets/puback/sent',
  'packets/pubrec/sent', 'packets/pubrel/sent', 'packets/pubcomp/sent',
  null, 'packets/suback', null, 'packets/unsuback', null, 'packets/pingresp',
  'packets/disconnect/sent', 'packets/auth'
]

/** `messages/qos<N>/received` and `/sent` by QoS. */
export const QOS_RECEIVED_METRIC: readonly MetricName[] = ['messages/qos0/received', 'messages/qos1/received', 'messages/qos2/received']
export const QOS_SENT_METRIC: readonly MetricName[] = ['messages/qos0/sent', 'messages/qos1/sent', 'messages/qos2/sent']

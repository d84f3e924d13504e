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
  'client.acl.allow', 'client.acl.deny',
  // the bridges' traffic, summed over this node's bridges (plugins/bridge_mqtt/sys.ts, docs/sys-topics.md)
  'bridge.mqtt.sent', 'bridge.mqtt.received', 'bridge.mqtt.dropped'
] as const

export type MetricName = typeof METRIC_NAMES[number]

/** Counter storage: one numeric slot per metric name. */
export type Metrics = Record<MetricName, number>

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

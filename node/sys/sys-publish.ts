/**
 * Publishing a broker message (`$SYS/...`) into the MQTT core, for the `$SYS` publisher,
 * sysmon and alarms. Messages go through aedes like any publish (routing, retained store,
 * hooks), with no client: they count in `messages/sent` when delivered and in
 * `messages/dropped` when no one subscribes, but never in `messages/received`.
 */
import type { Logger } from '../logger.js'
import type { MqttCore } from '../mqtt/core.js'

/** What a $SYS publisher needs: the MQTT core and where to log a failure. */
export interface SysPublishTarget {
  broker: { readonly core: Pick<MqttCore, 'closed' | 'publishWith'> }
  logger: Logger
}

/** The prefix of one node's topics: `$SYS/brokers/<node>/`. */
export function sysTopicPrefix (node: string): string {
  return `$SYS/brokers/${node}/`
}

/**
 * Publishes `payload` on `topic` at QoS 0 (EMQ X's system messages are QoS 0), retained
 * when asked. Fire-and-forget: a failure (the broker closing) is logged at debug level.
 */
export function publishSys (target: SysPublishTarget, topic: string, payload: string | Buffer, retain = false): void {
  const core = target.broker.core
  if (core.closed) return
  const packet = { cmd: 'publish' as const, topic, payload: typeof payload === 'string' ? Buffer.from(payload) : payload, qos: 0, retain, dup: false }
  core.publishWith(packet, (err) => {
    if (err) target.logger.debug({ err, topic }, '$SYS publish failed')
  })
}

/** True when `clientId` can stand in a topic name (no wildcard characters, no U+0000). */
export function isTopicSafe (clientId: string): boolean {
  return clientId.length > 0 && !clientId.includes('+') && !clientId.includes('#') && !clientId.includes('\u0000')
}

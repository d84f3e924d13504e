import mqttPacket from 'mqtt-packet'
import type { BrokerSettings } from './settings.js'
import { parseShared, topicMatches } from './topic.js'

import { clientState, type ClientState } from './client-state.js'
import { unmountTopic } from './zone.js'

/**
 * aedes' `authorizeForward` hook, run for every message on its way to one subscriber:
 * - with `mqtt.ignore_loop_deliver`, keeps an MQTT 3.1/3.1.1 client's own messages from it
 *   (EMQ X's rule; MQTT 5 clients choose per subscription with No Local);
 * - drops a message whose Message Expiry Interval has passed (counted as expired);
 * - drops a message larger than the client's Maximum Packet Size [MQTT-3.1.2-25];
 * - applies outbound topic aliases for MQTT 5 clients that accept them [MQTT-3.3.2-12]:
 *   first use sends topic + alias, later uses an empty topic + alias. Only for QoS 0 and
 *   clean sessions: a queued QoS 1/2 message of a persistent session may be redelivered on a
 *   new connection, where the alias means nothing (and QoS 1/2 not to a client with a Receive
 *   Maximum: the outbound window may send it after later QoS 0 messages).
 */
export function createForwardFilter (settings: BrokerSettings, delivered: (client: any, packet: any) => void,
  dropped: (packet: any, reason: string) => void): (client: any, packet: any) => any {
  return function authorizeForward (client: any, packet: any): any {
    if (settings.ignoreLoopDeliver && packet.clientId === client.id && client.version !== 5) return null
    // a queued message whose MQTT 5 Message Expiry passed: aedes drops it after asking here
    if (packet.messageExpiry !== undefined && packet.messageExpiry <= Date.now()) {
      dropped(packet, 'expired')
      return null
    }
    const out = forwardFor(client, packet)
    if (out !== null) delivered(client, packet)
    return out
  }
}

/** The packet as this client must get it, or null when it must not get it. */
function forwardFor (client: any, packet: any): any {
  const state: ClientState | undefined = client[clientState]
  // the client's mountpoint comes off what it receives (zone.ts); a copy, the packet is shared
  if (state?.mountpoint !== undefined && packet.topic.startsWith(state.mountpoint)) packet = { ...packet, topic: unmountTopic(state.mountpoint, packet.topic) }
  if (state === undefined || client.version !== 5) return packet
  if (packet.properties?.subscriptionIdentifier !== undefined) packet = withAllIdentifiers(client, packet)
  if (state.maximumPacketSize > 0 && encodedSize(packet) > state.maximumPacketSize) return null
  // a client with a Receive Maximum may get a QoS 1/2 PUBLISH after later QoS 0 ones (the
  // outbound window holds it): one that set an alias would come after a use of that alias
  if (state.topicAliasMaximum > 0 && (packet.qos === 0 || (client.clean && (client.receiveMaximum ?? 65535) >= 65535))) return withAlias(state, packet)
  return packet
}

/**
 * [MQTT-3.3.4-5] A message matching several subscriptions of one client carries the
 * identifier of each; aedes delivers one copy with the identifier of the first match, so
 * gather the others from the client's subscriptions (only for clients that use identifiers).
 */
function withAllIdentifiers (client: any, packet: any): any {
  const ids: number[] = []
  const subs = client.subscriptions as Record<string, { si?: number }>
  for (const filter in subs) {
    const si = subs[filter].si
    if (si === undefined) continue
    let real = filter
    try { real = parseShared(filter)?.filter ?? filter } catch { continue }
    if (topicMatches(real, packet.topic) && !ids.includes(si)) ids.push(si)
  }
  if (ids.length <= 1) return packet
  return { ...packet, properties: { ...packet.properties, subscriptionIdentifier: ids } }
}

function withAlias (state: ClientState, packet: any): any {
  const aliases = state.aliases ??= new Map()
  let alias = aliases.get(packet.topic)
  let topic = ''
  if (alias === undefined) {
    if (aliases.size >= state.topicAliasMaximum) return packet
    alias = aliases.size + 1
    aliases.set(packet.topic, alias)
    topic = packet.topic
  }
  return { ...packet, topic, properties: { ...packet.properties, topicAlias: alias } }
}

function encodedSize (packet: any): number {
  try {
    return mqttPacket.generate({ ...packet, cmd: 'publish', messageId: packet.qos > 0 ? 1 : undefined }, { protocolVersion: 5 }).length
  } catch {
    return Infinity
  }
}

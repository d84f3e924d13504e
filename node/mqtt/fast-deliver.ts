import mqttPacket from 'mqtt-packet'
import type { Wire } from './wire.js'
import { varintSize, writeVarint } from './wire-bytes.js'

/**
 * One-entry cache of the last encoded QoS 0 PUBLISH frame. In a fan-out every subscriber
 * gets its own aedes Packet object, but they share the topic string and payload Buffer, so
 * the frame is encoded once and the same Buffer is queued on every subscriber's wire.
 */
let lastPayload: Buffer | null = null
let lastTopic = ''
let lastFlags = -1
let lastFrame: Buffer | null = null

/**
 * Encodes a QoS 0 PUBLISH frame. Packets with MQTT 5 properties (subscription identifiers,
 * user properties, aliases ...) go through mqtt-packet; plain ones are built here in one
 * allocation.
 */
export function encodeQos0 (packet: any, v5: boolean): Buffer {
  const retain = packet.retain === true
  if (v5 && packet.properties !== undefined && hasProperties(packet.properties)) {
    return mqttPacket.generate({ cmd: 'publish', topic: packet.topic, payload: packet.payload, qos: 0, retain, dup: false, properties: packet.properties }, V5)
  }
  const payload: Buffer = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload
  const flags = (retain ? 1 : 0) | (v5 ? 2 : 0)
  if (payload === lastPayload && packet.topic === lastTopic && flags === lastFlags) return lastFrame!
  const topicLen = Buffer.byteLength(packet.topic)
  const remaining = 2 + topicLen + (v5 ? 1 : 0) + payload.length
  const frame = Buffer.allocUnsafe(1 + varintSize(remaining) + remaining)
  frame[0] = 0x30 | (retain ? 1 : 0)
  let pos = writeVarint(frame, 1, remaining)
  frame.writeUInt16BE(topicLen, pos)
  pos += 2
  pos += frame.write(packet.topic, pos)
  if (v5) frame[pos++] = 0 // no properties
  payload.copy(frame, pos)
  lastPayload = payload
  lastTopic = packet.topic
  lastFlags = flags
  lastFrame = frame
  return frame
}

/**
 * Encodes the first delivery of a QoS 1/2 PUBLISH (`packet`'s retain flag, `qos`, packet
 * identifier `messageId`): DUP 0, whatever the publisher's was [MQTT-3.3.1-3] (a resend is
 * retry.ts's copy, with DUP set). Packets with MQTT 5 properties go through mqtt-packet.
 */
export function encodeQos12 (packet: any, qos: number, messageId: number, v5: boolean): Buffer {
  const retain = packet.retain === true
  if (v5 && packet.properties !== undefined && hasProperties(packet.properties)) {
    return mqttPacket.generate({ cmd: 'publish', topic: packet.topic, payload: packet.payload, qos: qos as 1 | 2, messageId, retain, dup: false, properties: packet.properties }, V5)
  }
  const payload: Buffer = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload
  const topicLen = Buffer.byteLength(packet.topic)
  const remaining = 4 + topicLen + (v5 ? 1 : 0) + payload.length
  const frame = Buffer.allocUnsafe(1 + varintSize(remaining) + remaining)
  frame[0] = 0x30 | (qos << 1) | (retain ? 1 : 0)
  let pos = writeVarint(frame, 1, remaining)
  frame.writeUInt16BE(topicLen, pos)
  pos += 2
  pos += frame.write(packet.topic, pos)
  frame.writeUInt16BE(messageId, pos)
  pos += 2
  if (v5) frame[pos++] = 0 // no properties
  payload.copy(frame, pos)
  return frame
}

function hasProperties (props: Record<string, unknown>): boolean {
  for (const key in props) if (props[key] !== undefined) return true
  return false
}

const V5 = { protocolVersion: 5 } as const

/**
 * aedes' own test before it writes to a client (lib/write.js): connecting or connected. A
 * client is still `connecting` after its CONNACK while its CONNECT's last step runs (the
 * session's old queue emptied through the store); it is already reading then, so what it
 * subscribes to meanwhile must reach it.
 */
function writable (client: any): boolean {
  return (client.connecting === true || client.connected === true) && client.closed !== true
}

/**
 * aedes' first checks of a delivery: not the client's own message on a No Local subscription
 * [MQTT-3.8.3-3], and not a copy it already got through an overlapping subscription (the
 * message's counter not above the last one from its broker, which it records).
 */
function forThisClient (client: any, packet: any): boolean {
  if (packet.clientId === client.id && packet.nl) return false
  const brokerId = packet.brokerId
  if (brokerId) {
    const seen = client.duplicates[brokerId] || 0
    if (seen >= packet.brokerCounter) return false
    client.duplicates[brokerId] = packet.brokerCounter
  }
  return true
}

/**
 * Replaces aedes' per-client QoS 0 delivery (and QoS 1/2 delivery to a clean session, below)
 * with a synchronous one. Same decisions as aedes'
 * `deliver0` (no-local [MQTT-3.8.3-3], duplicate suppression for overlapping subscriptions,
 * the `authorizeForward` hook), without the two `setImmediate`s, two Packet copies and the
 * per-field writes it makes for every message to every subscriber. Installed in preConnect,
 * before aedes restores or creates any subscription, because aedes captures `deliver0` then.
 */
export function installFastDeliver (client: any, wire: Wire, dropped: (packet: any, reason: string) => void): void {
  const broker = client.broker
  client.deliver0 = function deliverQos0Fast (packet: any, cb: () => void): void {
    if (!forThisClient(client, packet)) return cb()
    // a subscriber past its queue's bytes, or not reading at all (drain-deadline.ts): QoS 0 is dropped, counted
    if (wire.congested || wire.stalled) {
      dropped(packet, 'queue_full')
      return cb()
    }
    const forward = broker.authorizeForward(client, packet)
    if (!forward || !writable(client)) return cb()
    let frame: Buffer
    try {
      frame = encodeQos0(forward, client.version === 5)
    } catch {
      // a message the encoder cannot write (the validator should have refused it on the way
      // in): dropped for this subscriber, never thrown into the router
      dropped(packet, 'unencodable')
      return cb()
    }
    if (wire.writeFrame(frame)) cb()
    else wire.waitDrain(cb)
  }

  // QoS 1/2 to a clean session: the same decisions as aedes' `deliverQoS` (no-local,
  // duplicate suppression, `authorizeForward`, its downgrade to the QoS of a subscription to
  // the very topic, a packet identifier from the client's counter) but DUP 0 on a first
  // delivery (aedes copies the publisher's [MQTT-3.3.1-3]), written at once instead of
  // after a `setImmediate`, a QoSPacket copy and mqtt-packet's writer and another
  // `setImmediate` before the callback. A persistent session's queue needs aedes' own (its
  // stored queue gives the identifier).
  const aedesDeliverQoS = client.deliverQoS
  client.deliverQoS = function deliverQoSFast (packet: any, cb: () => void): void {
    if (packet.qos === 0) { client.deliver0(packet, cb); return }
    if (client.clean !== true) { aedesDeliverQoS(packet, cb); return }
    if (!forThisClient(client, packet)) return cb()
    const forward = broker.authorizeForward(client, packet)
    if (!forward || !writable(client)) return cb()
    let messageId: number = forward.messageId
    if (!messageId) {
      messageId = client._nextId
      client._nextId = messageId >= 65535 ? 1 : messageId + 1
    }
    let qos: number = forward.qos
    const sub = client.subscriptions[forward.topic]
    if (sub && (sub.qos || 0) < qos) qos = sub.qos || 0
    const v5 = client.version === 5
    let frame: Buffer
    try {
      frame = qos === 0 ? encodeQos0(forward, v5) : encodeQos12(forward, qos, messageId, v5)
    } catch {
      dropped(packet, 'unencodable')
      return cb()
    }
    if (wire.writeFrame(frame)) cb()
    else wire.waitDrain(cb)
  }
}

/**
 * Pre-encoded MQTT 3.1.1 packets for the load generator. Everything is encoded once with
 * mqtt-packet; on the hot path the generator only copies bytes and patches the payload
 * timestamp (and the packet identifier for QoS 1).
 */
import mqttPacket from 'mqtt-packet'

/** Bytes at the start of every bench payload: the send time, float64 big-endian, in µs. */
export const TIMESTAMP_BYTES = 8

/** A CONNECT with clean session and the given keepalive (seconds), MQTT 3.1.1, with credentials when given. */
export function encodeConnect (clientId: string, keepalive: number, cred?: { username: string, password: string }): Buffer {
  return mqttPacket.generate({
    cmd: 'connect',
    protocolId: 'MQTT',
    protocolVersion: 4,
    clean: true,
    clientId,
    keepalive,
    ...(cred === undefined ? {} : { username: cred.username, password: Buffer.from(cred.password) })
  })
}

/** A SUBSCRIBE for one filter. */
export function encodeSubscribe (filter: string, qos: 0 | 1, messageId: number): Buffer {
  return mqttPacket.generate({ cmd: 'subscribe', messageId, subscriptions: [{ topic: filter, qos }] })
}

/** A PINGREQ (two bytes, §3.12). */
export const PINGREQ = Buffer.from([0xc0, 0x00])

/**
 * A PUBLISH encoded once, with the offsets the generator patches per message.
 * Invariant: `bytes.length` is the same for every message of this publisher.
 */
export interface PublishTemplate {
  /** The whole encoded packet. */
  bytes: Buffer
  /** Offset of the payload, whose first {@link TIMESTAMP_BYTES} hold the send time. */
  payloadOffset: number
  /** Offset of the 2-byte packet identifier, or -1 for QoS 0. */
  packetIdOffset: number
  /** False for a JSON payload: the send time is not patched in. */
  stamped: boolean
}

/**
 * Encodes a PUBLISH template for `topic` with a payload of `payloadSize` bytes (at least 8).
 * With `jsonTemp`, the payload is `{"temp":<jsonTemp>}` padded with spaces (valid JSON) and unstamped.
 */
export function encodePublishTemplate (topic: string, qos: 0 | 1, payloadSize: number, jsonTemp?: number): PublishTemplate {
  const json = jsonTemp === undefined ? null : Buffer.from(JSON.stringify({ temp: jsonTemp }))
  const size = Math.max(payloadSize, json?.length ?? TIMESTAMP_BYTES)
  const payload = Buffer.alloc(size, json === null ? 0x2e : 0x20)
  json?.copy(payload)
  const bytes = qos === 0
    ? mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 0, retain: false, dup: false })
    : mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 1, messageId: 1, retain: false, dup: false })
  const payloadOffset = bytes.length - size
  return { bytes, payloadOffset, packetIdOffset: qos === 0 ? -1 : payloadOffset - 2, stamped: json === null }
}

/**
 * Builds `count` consecutive copies of a template in one buffer. The generator copies a
 * prefix of it per batch instead of encoding packets one by one.
 */
export function repeatTemplate (template: PublishTemplate, count: number): Buffer {
  const one = template.bytes
  const out = Buffer.allocUnsafe(one.length * count)
  for (let i = 0; i < count; i++) one.copy(out, i * one.length)
  return out
}

/** Writes a PUBACK for `packetId` into `out` at `offset` (§3.4); returns the next offset. */
export function writePuback (out: Buffer, offset: number, packetId: number): number {
  out[offset] = 0x40
  out[offset + 1] = 0x02
  out[offset + 2] = packetId >> 8
  out[offset + 3] = packetId & 0xff
  return offset + 4
}

/**
 * The messages one node forwards to another in one event-loop turn, as one frame body
 * with a fixed binary layout (no per-message MessagePack, the broker id once):
 *
 *   u16 brokerId length, brokerId (UTF-8), u32 message count, then per message:
 *   u8 flags (bits 0-1 QoS, 2 retain, 3 client id, 4 properties, 5 groups),
 *   f64 broker counter, u16 topic length, topic, u32 payload length, payload,
 *   [u16 length, client id], [u32 length, properties as MessagePack],
 *   [u32 length, shared groups as MessagePack]
 *
 * All messages of a batch come from one broker id (the publishing node's current process).
 */
import { Packr } from 'msgpackr'

/** One forwarded message. */
export interface ForwardedMessage {
  topic: string
  payload: Buffer
  qos: number
  retain: boolean
  brokerCounter: number
  clientId?: string
  properties?: Record<string, unknown>
  /** Shared groups (route keys) the receiving node delivers it to. */
  groups?: string[]
}

const packr = new Packr({ useRecords: false, moreTypes: false })

const RETAIN = 4
const CLIENT_ID = 8
const PROPERTIES = 16
const GROUPS = 32

/** Encodes `messages` (from broker `brokerId`) as one frame body. */
export function encodeBatch (brokerId: string, messages: readonly ForwardedMessage[]): Buffer {
  const extras: Array<Buffer | null> = new Array(messages.length * 2)
  let size = 2 + Buffer.byteLength(brokerId) + 4
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    size += 1 + 8 + 2 + Buffer.byteLength(m.topic) + 4 + m.payload.length
    if (m.clientId !== undefined) size += 2 + Buffer.byteLength(m.clientId)
    const props = m.properties !== undefined ? packr.pack(m.properties) : null
    const groups = m.groups !== undefined ? packr.pack(m.groups) : null
    if (props !== null) size += 4 + props.length
    if (groups !== null) size += 4 + groups.length
    extras[2 * i] = props
    extras[2 * i + 1] = groups
  }
  const out = Buffer.allocUnsafe(size)
  let at = out.writeUInt16BE(Buffer.byteLength(brokerId), 0)
  at += out.write(brokerId, at)
  at = out.writeUInt32BE(messages.length, at)
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    const props = extras[2 * i]
    const groups = extras[2 * i + 1]
    out[at++] = (m.qos & 3) | (m.retain ? RETAIN : 0) | (m.clientId !== undefined ? CLIENT_ID : 0) | (props !== null ? PROPERTIES : 0) | (groups !== null ? GROUPS : 0)
    at = out.writeDoubleBE(m.brokerCounter, at)
    const topicBytes = Buffer.byteLength(m.topic)
    at = out.writeUInt16BE(topicBytes, at)
    at += out.write(m.topic, at)
    at = out.writeUInt32BE(m.payload.length, at)
    at += m.payload.copy(out, at)
    if (m.clientId !== undefined) {
      at = out.writeUInt16BE(Buffer.byteLength(m.clientId), at)
      at += out.write(m.clientId, at)
    }
    if (props !== null) { at = out.writeUInt32BE(props.length, at); at += props.copy(out, at) }
    if (groups !== null) { at = out.writeUInt32BE(groups.length, at); at += groups.copy(out, at) }
  }
  return out
}

/**
 * Decodes a frame body made by {@link encodeBatch}, calling `each` per message. Payloads
 * are copies (the body may be a view of a buffer that is reused). Throws on a truncated or
 * malformed body.
 */
export function decodeBatch (body: Buffer, each: (brokerId: string, m: ForwardedMessage) => void): void {
  let at = 0
  const need = (n: number): void => { if (at + n > body.length) throw new Error(`forwarded batch truncated at byte ${at}`) }
  need(2)
  const idLength = body.readUInt16BE(at); at += 2
  need(idLength)
  const brokerId = body.toString('utf8', at, at + idLength); at += idLength
  need(4)
  const count = body.readUInt32BE(at); at += 4
  for (let i = 0; i < count; i++) {
    need(1 + 8 + 2)
    const flags = body[at++]
    const brokerCounter = body.readDoubleBE(at); at += 8
    const topicLength = body.readUInt16BE(at); at += 2
    need(topicLength + 4)
    const topic = body.toString('utf8', at, at + topicLength); at += topicLength
    const payloadLength = body.readUInt32BE(at); at += 4
    need(payloadLength)
    const payload = Buffer.from(body.subarray(at, at + payloadLength)); at += payloadLength
    const m: ForwardedMessage = { topic, payload, qos: flags & 3, retain: (flags & RETAIN) !== 0, brokerCounter }
    if ((flags & CLIENT_ID) !== 0) {
      need(2)
      const n = body.readUInt16BE(at); at += 2
      need(n)
      m.clientId = body.toString('utf8', at, at + n); at += n
    }
    if ((flags & PROPERTIES) !== 0) {
      need(4)
      const n = body.readUInt32BE(at); at += 4
      need(n)
      m.properties = packr.unpack(Buffer.from(body.subarray(at, at + n))); at += n
      // the receiving node publishes them and forwards them on (a bridged message): null
      // properties killed the node there (found by bench/fuzz/cluster-door.ts)
      if (m.properties === null || typeof m.properties !== 'object' || Array.isArray(m.properties)) throw new Error(`forwarded batch: the properties of message ${i + 1} are not a map`)
    }
    if ((flags & GROUPS) !== 0) {
      need(4)
      const n = body.readUInt32BE(at); at += 4
      need(n)
      m.groups = packr.unpack(body.subarray(at, at + n)); at += n
      if (!Array.isArray(m.groups) || !m.groups.every(g => typeof g === 'string')) throw new Error(`forwarded batch: the groups of message ${i + 1} are not a list of strings`)
    }
    each(brokerId, m)
  }
}

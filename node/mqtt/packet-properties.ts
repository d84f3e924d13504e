/**
 * MQTT 5 property blocks, checked as the standard requires (section 2.2.2): each id valid
 * for the packet it is in, each value inside the block, single-valued properties at most
 * once, values in range. Used by {@link ./packet-check.ts}.
 */
import { readVarint, varintSize, scanUtf8, UTF8_BAD, UTF8_WILDCARD, UTF8_CONTROL } from './wire-bytes.js'

/** MQTT 5 reason codes the validator answers with. */
export const MALFORMED = 0x81
export const PROTOCOL_ERROR = 0x82
export const TOPIC_ALIAS_INVALID = 0x94
export const PAYLOAD_FORMAT_INVALID = 0x99

/** Why a packet was refused: the MQTT 5 reason code (DISCONNECT or CONNACK) and a message for the log. */
export interface PacketProblem { reasonCode: number, message: string }

const BYTE = 1
const INT16 = 2
const INT32 = 3
const VARINT = 4
const STRING = 5
const BINARY = 6
const PAIR = 7

/** Value type by property id (0 = not a property id) [MQTT-2.2.2.2]. */
const TYPE = new Uint8Array(43)
for (const [id, type] of [
  [0x01, BYTE], [0x02, INT32], [0x03, STRING], [0x08, STRING], [0x09, BINARY], [0x0b, VARINT],
  [0x11, INT32], [0x12, STRING], [0x13, INT16], [0x15, STRING], [0x16, BINARY], [0x17, BYTE],
  [0x18, INT32], [0x19, BYTE], [0x1a, STRING], [0x1c, STRING], [0x1f, STRING], [0x21, INT16],
  [0x22, INT16], [0x23, INT16], [0x24, BYTE], [0x25, BYTE], [0x26, PAIR], [0x27, INT32],
  [0x28, BYTE], [0x29, BYTE], [0x2a, BYTE]
]) TYPE[id] = type

/** The properties a client may send in one kind of packet (ids as a 64-bit set). */
export interface PropertySet { readonly lo: number, readonly hi: number, readonly name: string }

function set (name: string, ids: number[]): PropertySet {
  let lo = 0
  let hi = 0
  for (const id of ids) {
    if (id < 32) lo |= 1 << id
    else hi |= 1 << (id - 32)
  }
  return { lo, hi, name }
}

const USER = 0x26
export const CONNECT_PROPS = set('CONNECT', [0x11, 0x15, 0x16, 0x17, 0x19, 0x21, 0x22, USER, 0x27])
export const WILL_PROPS = set('Will', [0x01, 0x02, 0x03, 0x08, 0x09, 0x18, USER])
export const PUBLISH_PROPS = set('PUBLISH', [0x01, 0x02, 0x03, 0x08, 0x09, 0x0b, 0x23, USER])
export const ACK_PROPS = set('acknowledgement', [0x1f, USER])
export const SUBSCRIBE_PROPS = set('SUBSCRIBE', [0x0b, USER])
export const UNSUBSCRIBE_PROPS = set('UNSUBSCRIBE', [USER])
export const DISCONNECT_PROPS = set('DISCONNECT', [0x11, 0x1c, 0x1f, USER])
export const AUTH_PROPS = set('AUTH', [0x15, 0x16, 0x1f, USER])

/**
 * What the last {@link checkProperties} saw: the problem when it returned -1, and the
 * values other checks need. Module state instead of a result object: the PUBLISH path
 * runs this for every message and must not allocate.
 */
export const seen = {
  problem: null as PacketProblem | null,
  /** Payload Format Indicator, -1 when absent. */
  payloadFormat: -1,
  /** Topic Alias, -1 when absent. */
  topicAlias: -1,
  /** Session Expiry Interval, -1 when absent. */
  sessionExpiry: -1,
  /** Ids present, as a 64-bit set (lo: ids < 32). */
  lo: 0,
  hi: 0
}

function fail (reasonCode: number, message: string): number {
  seen.problem = { reasonCode, message }
  return -1
}

/**
 * Checks the property block (length and properties) at `pos` of a packet ending at `end`.
 * Returns the offset after the block, or -1 with {@link seen}.problem set. `strict` also
 * refuses control characters in strings (`mqtt.strict_mode`).
 */
export function checkProperties (buf: Buffer, pos: number, end: number, allowed: PropertySet, strict: boolean): number {
  seen.problem = null
  seen.payloadFormat = -1
  seen.topicAlias = -1
  seen.sessionExpiry = -1
  seen.lo = 0
  seen.hi = 0
  const len = readVarint(buf, pos, end)
  // 2.2.2.1 a Variable Byte Integer (1.5.5); a block that does not fit the packet cannot be parsed (1.2): 0x81
  if (len < 0) return fail(MALFORMED, `${allowed.name} property length is not a valid variable byte integer`)
  let p = pos + varintSize(len)
  const stop = p + len
  if (stop > end) return fail(MALFORMED, `${allowed.name} properties run past the end of the packet`)
  while (p < stop) {
    const id = buf[p++]
    const type = id < 43 ? TYPE[id] : 0
    // 2.2.2.2 "an Identifier which is not valid for its packet type ... is a Malformed Packet": 0x81
    if (type === 0) return fail(MALFORMED, `unknown property identifier 0x${id.toString(16)} in ${allowed.name}`)
    const bit = id < 32 ? (1 << id) : (1 << (id - 32))
    const allowedHere = id < 32 ? (allowed.lo & bit) !== 0 : (allowed.hi & bit) !== 0
    // the same for an identifier valid elsewhere (a CONNACK-only property from a client) (2.2.2.2)
    if (!allowedHere) return fail(MALFORMED, `property 0x${id.toString(16)} is not valid in ${allowed.name}`)
    // [MQTT-3.3.4-6] a client never sends a Subscription Identifier in a PUBLISH; 3.3.4: "It is a Protocol Error"
    if (id === 0x0b && allowed === PUBLISH_PROPS) return fail(PROTOCOL_ERROR, 'Subscription Identifier in a PUBLISH from a client [MQTT-3.3.4-6]')
    const repeated = id < 32 ? (seen.lo & bit) !== 0 : (seen.hi & bit) !== 0
    // every property but User Property appears at most once: each section says "It is a
    // Protocol Error to include <it> more than once" (3.1.2.11, 3.1.3.2, 3.3.2.3, 3.14.2.2 ...)
    if (repeated && id !== USER) return fail(PROTOCOL_ERROR, `property 0x${id.toString(16)} appears twice in ${allowed.name}`)
    if (id < 32) seen.lo |= bit
    else seen.hi |= bit
    let value = 0
    switch (type) {
      case BYTE:
        // a value not of the property's data type (cut short) is a Malformed Packet (2.2.2.2)
        if (p + 1 > stop) return fail(MALFORMED, `property 0x${id.toString(16)} runs past the properties`)
        value = buf[p++]
        // Request Problem / Response Information: "a Protocol Error ... to have a value other
        // than 0 or 1" (3.1.2.11.6, 3.1.2.11.7); the Payload Format Indicator has only 0 and 1
        // (3.3.2.3.2): other data not allowed by the protocol, a Protocol Error by 1.2
        if (value > 1) return fail(PROTOCOL_ERROR, `property 0x${id.toString(16)} must be 0 or 1`)
        if (id === 0x01) seen.payloadFormat = value
        break
      case INT16:
        if (p + 2 > stop) return fail(MALFORMED, `property 0x${id.toString(16)} runs past the properties`)
        value = buf.readUInt16BE(p)
        p += 2
        // 3.1.2.11.3 "a Protocol Error ... for it to have the value 0"
        if (value === 0 && id === 0x21) return fail(PROTOCOL_ERROR, 'Receive Maximum 0 [MQTT-3.1.2.11.3]')
        if (id === 0x23) {
          // [MQTT-3.3.2-8] Topic Alias 0 is not permitted; 3.3.4: "A Topic Alias value of 0 ... is
          // a Protocol Error, the receiver uses DISCONNECT with Reason Code of 0x94"
          if (value === 0) return fail(TOPIC_ALIAS_INVALID, 'Topic Alias 0')
          seen.topicAlias = value
        }
        break
      case INT32:
        if (p + 4 > stop) return fail(MALFORMED, `property 0x${id.toString(16)} runs past the properties`)
        value = buf.readUInt32BE(p)
        p += 4
        // 3.1.2.11.4: "a Protocol Error ... for the value to be set to zero"
        if (value === 0 && id === 0x27) return fail(PROTOCOL_ERROR, 'Maximum Packet Size 0 [MQTT-3.1.2.11.4]')
        if (id === 0x11) seen.sessionExpiry = value
        break
      case VARINT:
        value = readVarint(buf, p, stop)
        if (value < 0) return fail(MALFORMED, `property 0x${id.toString(16)} is not a valid variable byte integer`)
        p += varintSize(value)
        // 3.8.2.1.2 "It is a Protocol Error if the Subscription Identifier has a value of 0"
        if (value === 0) return fail(PROTOCOL_ERROR, 'Subscription Identifier 0 [MQTT-3.8.2.1.2]')
        break
      case STRING:
        p = checkString(buf, p, stop, id, strict)
        if (p < 0) return -1
        break
      case BINARY:
        if (p + 2 > stop || p + 2 + buf.readUInt16BE(p) > stop) return fail(MALFORMED, `property 0x${id.toString(16)} runs past the properties`)
        p += 2 + buf.readUInt16BE(p)
        break
      case PAIR:
        p = checkString(buf, p, stop, id, strict)
        if (p < 0) return -1
        p = checkString(buf, p, stop, id, strict)
        if (p < 0) return -1
        break
    }
  }
  return stop
}

/** A UTF-8 string property value at `p`; returns the offset after it or -1. */
function checkString (buf: Buffer, p: number, stop: number, id: number, strict: boolean): number {
  if (p + 2 > stop) return fail(MALFORMED, `property 0x${id.toString(16)} runs past the properties`)
  const next = p + 2 + buf.readUInt16BE(p)
  if (next > stop) return fail(MALFORMED, `property 0x${id.toString(16)} runs past the properties`)
  const flags = scanUtf8(buf, p + 2, next)
  // [MQTT-1.5.4-1] [MQTT-1.5.4-2] [MQTT-1.5.7-1] ill-formed UTF-8 or U+0000 "is a Malformed Packet"
  if ((flags & UTF8_BAD) !== 0) return fail(MALFORMED, `property 0x${id.toString(16)} is not well-formed UTF-8 [MQTT-1.5.4-1]`)
  if (strict && (flags & UTF8_CONTROL) !== 0) return fail(MALFORMED, `property 0x${id.toString(16)} has a control character (mqtt.strict_mode)`)
  // [MQTT-3.3.2-14] a Response Topic is a topic name: no wildcards [MQTT-4.7.0-1], not empty
  // [MQTT-4.7.3-1]; the standard names no code: data not allowed, a Protocol Error by 1.2
  if (id === 0x08 && ((flags & UTF8_WILDCARD) !== 0 || next === p + 2)) return fail(PROTOCOL_ERROR, 'Response Topic is not a valid topic name')
  return next
}

/** True when property `id` was in the block {@link checkProperties} last read. */
export function hadProperty (id: number): boolean {
  return id < 32 ? (seen.lo & (1 << id)) !== 0 : (seen.hi & (1 << (id - 32))) !== 0
}

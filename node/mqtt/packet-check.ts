/**
 * The strict validator of what a client sends: one pure function over one frame, checking
 * it as MQTT 3.1.1 and 5.0 require before aedes (whose mqtt-packet decoding is lenient)
 * sees it. A frame it refuses closes the connection (see `Wire`), whatever
 * `mqtt.strict_mode` says; strict mode adds the checks beyond the standard (control
 * characters in strings, payloads that say they are UTF-8).
 *
 * Reason codes follow MQTT 5 section 4.13: 0x81 Malformed Packet for bytes that do not
 * decode (lengths, reserved bits, ill-formed UTF-8, invalid property ids), 0x82 Protocol
 * Error for packets that decode but break a rule (packet id 0, a repeated property, an
 * empty SUBSCRIBE), and the specific codes where the standard names one.
 */
import { scanUtf8, isUtf8Range, readVarint, varintFault, varintSize, UTF8_BAD, UTF8_WILDCARD, UTF8_CONTROL } from './wire-bytes.js'
import {
  checkProperties, hadProperty, seen, MALFORMED, PROTOCOL_ERROR, PAYLOAD_FORMAT_INVALID,
  CONNECT_PROPS, WILL_PROPS, PUBLISH_PROPS, ACK_PROPS, SUBSCRIBE_PROPS, UNSUBSCRIBE_PROPS, DISCONNECT_PROPS, AUTH_PROPS,
  type PacketProblem
} from './packet-properties.js'

export { MALFORMED, PROTOCOL_ERROR, PAYLOAD_FORMAT_INVALID, type PacketProblem } from './packet-properties.js'
/** CONNACK / reason code for a protocol level the broker does not speak [MQTT-3.1.2-2]. */
export const UNSUPPORTED_PROTOCOL_VERSION = 0x84

const CONNECT = 1
const PUBLISH = 3
const PUBREL = 6
const PUBCOMP = 7
const SUBSCRIBE = 8
const UNSUBSCRIBE = 10
const PINGREQ = 12
const DISCONNECT = 14
const AUTH = 15

/** Required low nibble of the first byte per packet type from a client; -1 = any (PUBLISH), -2 = never sent by a client. */
const FLAGS = [-2, 0, -2, -1, 0, 0, 2, 0, 2, -2, 2, -2, 0, -2, 0, 0]

/** Valid reason codes (v5) of PUBACK/PUBREC, PUBREL/PUBCOMP, DISCONNECT and AUTH. */
const ACK_CODES = new Set([0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99])
const REL_CODES = new Set([0x00, 0x92])
const DISCONNECT_CODES = new Set([0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8b, 0x8d, 0x8e, 0x8f, 0x90, 0x93,
  0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f, 0xa0, 0xa1, 0xa2])
const AUTH_CODES = new Set([0x00, 0x18, 0x19])

function problem (reasonCode: number, message: string): PacketProblem {
  return { reasonCode, message }
}

/**
 * Checks one frame from a client: first byte `b0`, body [body, end) in `buf`, on a
 * connection at protocol level `version` (3, 4 or 5; for a CONNECT the level it carries).
 * The whole frame must be in `buf`, except for a PUBLISH when not `strict`: then only its
 * topic, packet id and property block are read (the payload may still be arriving).
 * Returns null when the frame is valid.
 */
export function checkPacket (buf: Buffer, b0: number, body: number, end: number, version: number, strict: boolean): PacketProblem | null {
  const header = checkHeader(b0, version)
  if (header !== null) return header
  const type = b0 >> 4
  const v5 = version === 5
  const len = end - body
  switch (type) {
    case CONNECT: return checkConnect(buf, body, end, strict)
    case PUBLISH: return checkPublish(buf, b0, body, end, v5, strict)
    case SUBSCRIBE:
    case UNSUBSCRIBE: return checkSubscribe(buf, body, end, type === SUBSCRIBE, v5, strict)
    case PINGREQ: return len === 0 ? null : problem(MALFORMED, 'PINGREQ with a body')
    case DISCONNECT:
      if (!v5 || len === 0) return len === 0 ? null : problem(MALFORMED, 'DISCONNECT with a body')
      if (!DISCONNECT_CODES.has(buf[body])) return problem(PROTOCOL_ERROR, `DISCONNECT reason code 0x${buf[body].toString(16)}`)
      return len === 1 ? null : propertiesToEnd(buf, body + 1, end, DISCONNECT_PROPS, strict)
    case AUTH:
      if (len === 0) return null
      if (!AUTH_CODES.has(buf[body])) return problem(PROTOCOL_ERROR, `AUTH reason code 0x${buf[body].toString(16)}`)
      return len === 1 ? null : propertiesToEnd(buf, body + 1, end, AUTH_PROPS, strict)
    default: { // PUBACK, PUBREC, PUBREL, PUBCOMP
      if (len < 2) return problem(MALFORMED, 'acknowledgement without a packet identifier')
      if (buf.readUInt16BE(body) === 0) return problem(PROTOCOL_ERROR, 'packet identifier 0 [MQTT-2.2.1-3]')
      if (!v5 || len === 2) return len === 2 ? null : problem(MALFORMED, 'acknowledgement longer than its packet identifier')
      const codes = type === PUBREL || type === PUBCOMP ? REL_CODES : ACK_CODES
      if (!codes.has(buf[body + 2])) return problem(PROTOCOL_ERROR, `acknowledgement reason code 0x${buf[body + 2].toString(16)}`)
      return len === 3 ? null : propertiesToEnd(buf, body + 3, end, ACK_PROPS, strict)
    }
  }
}

/**
 * The first byte alone: packet type and reserved flags [MQTT-2.2.2-2]. The scan checks it
 * as soon as the byte arrives, so a stream of garbage is refused without waiting for the
 * body its bogus length announces.
 */
export function checkHeader (b0: number, version: number): PacketProblem | null {
  const type = b0 >> 4
  const flags = FLAGS[type]
  if (type === 0 || (type === AUTH && version !== 5 && version !== 0)) return problem(MALFORMED, `reserved packet type ${type}`)
  if (flags === -2) return problem(PROTOCOL_ERROR, `packet type ${type} is sent by servers only`)
  if (flags >= 0 && (b0 & 15) !== flags) return problem(MALFORMED, `packet type ${type} with reserved flags 0x${(b0 & 15).toString(16)} [MQTT-2.2.2-2]`)
  return null
}

/** A property block that must end the packet. */
function propertiesToEnd (buf: Buffer, pos: number, end: number, allowed: typeof ACK_PROPS, strict: boolean): PacketProblem | null {
  const after = checkProperties(buf, pos, end, allowed, strict)
  if (after < 0) return seen.problem
  return after === end ? null : problem(MALFORMED, `bytes after the ${allowed.name} properties`)
}

/** A UTF-8 string field at `p`; returns the offset after it, or -1 with `out.problem`. */
function readString (buf: Buffer, p: number, end: number, what: string, strict: boolean, out: { problem: PacketProblem | null }): number {
  if (p + 2 > end) { out.problem = problem(MALFORMED, `${what} missing`); return -1 }
  const next = p + 2 + buf.readUInt16BE(p)
  if (next > end) { out.problem = problem(MALFORMED, `${what} runs past the end of the packet`); return -1 }
  const flags = scanUtf8(buf, p + 2, next)
  if ((flags & UTF8_BAD) !== 0) { out.problem = problem(MALFORMED, `${what} is not well-formed UTF-8 [MQTT-1.5.4-1]`); return -1 }
  if (strict && (flags & UTF8_CONTROL) !== 0) { out.problem = problem(MALFORMED, `${what} has a control character (mqtt.strict_mode)`); return -1 }
  return next
}

/** Binary data (two length bytes, then the bytes); returns the offset after it or -1. */
function skipBinary (buf: Buffer, p: number, end: number): number {
  if (p + 2 > end) return -1
  const next = p + 2 + buf.readUInt16BE(p)
  return next > end ? -1 : next
}

function checkConnect (buf: Buffer, body: number, end: number, strict: boolean): PacketProblem | null {
  const out = { problem: null as PacketProblem | null }
  let p = readString(buf, body, end, 'protocol name', false, out)
  if (p < 0) return out.problem
  const name = buf.toString('latin1', body + 2, p)
  if (name !== 'MQTT' && name !== 'MQIsdp') return problem(MALFORMED, `protocol name ${JSON.stringify(name)} [MQTT-3.1.2-1]`)
  if (p + 4 > end) return problem(MALFORMED, 'CONNECT shorter than its variable header')
  const level = buf[p] & 0x7f // bit 7: bridge mode
  // [MQTT-3.1.2-2] answered with CONNACK 0x01 / 0x84 by the caller
  if (level < 3 || level > 5) return problem(UNSUPPORTED_PROTOCOL_VERSION, `protocol level ${buf[p]} [MQTT-3.1.2-2]`)
  const v5 = level === 5
  const f = buf[p + 1]
  if ((f & 1) !== 0) return problem(MALFORMED, 'CONNECT reserved flag set [MQTT-3.1.2-3]')
  const will = (f & 4) !== 0
  const willQos = (f >> 3) & 3
  if (willQos === 3) return problem(MALFORMED, 'Will QoS 3 [MQTT-3.1.2-14]')
  if (!will && (willQos !== 0 || (f & 0x20) !== 0)) return problem(MALFORMED, 'Will QoS or Will Retain without a Will [MQTT-3.1.2-13] [MQTT-3.1.2-15]')
  const username = (f & 0x80) !== 0
  const password = (f & 0x40) !== 0
  if (!v5 && password && !username) return problem(MALFORMED, 'password without a user name [MQTT-3.1.2-22]')
  p += 4 // level, flags, keep alive
  if (v5) {
    p = checkProperties(buf, p, end, CONNECT_PROPS, strict)
    if (p < 0) return seen.problem
    // [MQTT-3.1.2.11.10] Authentication Data without an Authentication Method
    if (hadProperty(0x16) && !hadProperty(0x15)) return problem(PROTOCOL_ERROR, 'Authentication Data without an Authentication Method')
  }
  p = readString(buf, p, end, 'client identifier', strict, out)
  if (p < 0) return out.problem
  if (will) {
    let payloadFormat = -1
    if (v5) {
      p = checkProperties(buf, p, end, WILL_PROPS, strict)
      if (p < 0) return seen.problem
      payloadFormat = seen.payloadFormat
    }
    const topicStart = p
    p = readString(buf, p, end, 'Will Topic', strict, out)
    if (p < 0) return out.problem
    const topicFlags = scanUtf8(buf, topicStart + 2, p)
    if (p === topicStart + 2 || (topicFlags & UTF8_WILDCARD) !== 0) return problem(PROTOCOL_ERROR, 'Will Topic is not a valid topic name [MQTT-3.1.3-11]')
    const payloadStart = p
    p = skipBinary(buf, p, end)
    if (p < 0) return problem(MALFORMED, 'Will Payload runs past the end of the packet')
    if (strict && payloadFormat === 1 && !isUtf8Range(buf, payloadStart + 2, p)) return problem(PAYLOAD_FORMAT_INVALID, 'Will Payload is not UTF-8 as its Payload Format Indicator says')
  }
  if (username) {
    p = readString(buf, p, end, 'user name', strict, out)
    if (p < 0) return out.problem
  }
  if (password) {
    p = skipBinary(buf, p, end)
    if (p < 0) return problem(MALFORMED, 'password runs past the end of the packet')
  }
  return p === end ? null : problem(MALFORMED, 'bytes after the end of the CONNECT payload')
}

/**
 * PUBLISH: header flags, topic name, packet id and (v5) properties; the payload only in
 * strict mode with Payload Format Indicator 1. No allocation unless the packet is refused.
 */
function checkPublish (buf: Buffer, b0: number, body: number, end: number, v5: boolean, strict: boolean): PacketProblem | null {
  const qos = (b0 >> 1) & 3
  if (qos === 3) return problem(MALFORMED, 'PUBLISH with QoS 3 [MQTT-3.3.1-4]')
  if (qos === 0 && (b0 & 8) !== 0) return problem(MALFORMED, 'QoS 0 PUBLISH with DUP set [MQTT-3.3.1-2]')
  if (body + 2 > end) return problem(MALFORMED, 'PUBLISH without a topic')
  const topicEnd = body + 2 + buf.readUInt16BE(body)
  if (topicEnd > end) return problem(MALFORMED, 'PUBLISH topic longer than the packet')
  const flags = scanUtf8(buf, body + 2, topicEnd)
  if ((flags & UTF8_BAD) !== 0) return problem(MALFORMED, 'topic name is not well-formed UTF-8 [MQTT-1.5.4-1]')
  if ((flags & UTF8_WILDCARD) !== 0) return problem(PROTOCOL_ERROR, 'wildcard in a topic name [MQTT-3.3.2-2]')
  if (strict && (flags & UTF8_CONTROL) !== 0) return problem(MALFORMED, 'control character in a topic name (mqtt.strict_mode)')
  let p = topicEnd
  if (qos > 0) {
    if (p + 2 > end) return problem(MALFORMED, 'PUBLISH without a packet identifier')
    if (buf.readUInt16BE(p) === 0) return problem(PROTOCOL_ERROR, 'PUBLISH with packet identifier 0 [MQTT-2.2.1-3]')
    p += 2
  }
  let payloadFormat = -1
  let alias = false
  if (v5) {
    if (p >= end) return problem(MALFORMED, 'PUBLISH without a property length')
    if (buf[p] === 0) {
      p++ // no properties: the common case, nothing to walk
    } else {
      p = checkProperties(buf, p, end, PUBLISH_PROPS, strict)
      if (p < 0) return seen.problem
      payloadFormat = seen.payloadFormat
      alias = seen.topicAlias > 0
    }
  }
  // [MQTT-4.7.3-1] a topic name is at least one character, unless a v5 Topic Alias stands for it [MQTT-3.3.2-1]
  if (topicEnd === body + 2 && !alias) return problem(PROTOCOL_ERROR, 'PUBLISH with an empty topic name and no Topic Alias')
  if (strict && payloadFormat === 1 && end <= buf.length && !isUtf8Range(buf, p, end)) {
    return problem(PAYLOAD_FORMAT_INVALID, 'payload is not UTF-8 as its Payload Format Indicator says [MQTT-3.3.2-4]')
  }
  return null
}

function checkSubscribe (buf: Buffer, body: number, end: number, subscribe: boolean, v5: boolean, strict: boolean): PacketProblem | null {
  const what = subscribe ? 'SUBSCRIBE' : 'UNSUBSCRIBE'
  if (body + 2 > end) return problem(MALFORMED, `${what} without a packet identifier`)
  if (buf.readUInt16BE(body) === 0) return problem(PROTOCOL_ERROR, `${what} with packet identifier 0 [MQTT-2.2.1-3]`)
  let p = body + 2
  if (v5) {
    p = checkProperties(buf, p, end, subscribe ? SUBSCRIBE_PROPS : UNSUBSCRIBE_PROPS, strict)
    if (p < 0) return seen.problem
  }
  // [MQTT-3.8.3-3] [MQTT-3.10.3-2] at least one topic filter
  if (p === end) return problem(PROTOCOL_ERROR, `${what} without a topic filter`)
  const out = { problem: null as PacketProblem | null }
  while (p < end) {
    const start = p
    p = readString(buf, p, end, 'topic filter', strict, out)
    if (p < 0) return out.problem
    // [MQTT-4.7.3-1] topic filters are at least one character long
    if (p === start + 2) return problem(PROTOCOL_ERROR, 'empty topic filter [MQTT-4.7.3-1]')
    if (!subscribe) continue
    if (p >= end) return problem(MALFORMED, 'topic filter without subscription options')
    const options = buf[p++]
    if ((options & (v5 ? 0xc0 : 0xfc)) !== 0) return problem(MALFORMED, 'subscription options with reserved bits set [MQTT-3.8.3-5]')
    if ((options & 3) === 3) return problem(MALFORMED, 'subscription with QoS 3 [MQTT-3.8.3-4]')
    if (v5 && (options >> 4) === 3) return problem(PROTOCOL_ERROR, 'Retain Handling 3')
    // [MQTT-3.8.3-4] No Local on a shared subscription
    if (v5 && (options & 4) !== 0 && p - start - 3 >= 7 && buf.toString('latin1', start + 2, start + 9) === '$share/') {
      return problem(PROTOCOL_ERROR, 'No Local on a shared subscription [MQTT-3.8.3-4]')
    }
  }
  return null
}

/**
 * End offset of the PUBLISH prefix the scan reads: topic length, topic, the packet id for
 * QoS 1/2 and (v5) the property block. Beyond what is in `buf` while it cannot be known yet.
 */
export function publishPrefix (buf: Buffer, body: number, end: number, hasId: boolean, v5: boolean): number {
  if (body + 2 > buf.length) return Math.min(body + 2, end)
  const p = body + 2 + buf.readUInt16BE(body) + (hasId ? 2 : 0)
  if (!v5 || p >= end) return Math.min(p, end)
  // the property length: up to four bytes, then that many bytes of properties
  const len = readVarint(buf, p, buf.length)
  if (len >= 0) return Math.min(p + varintSize(len) + len, end)
  if (varintFault(buf, p, buf.length) === 'incomplete') return Math.min(buf.length + 1, end)
  return Math.min(p + 4, end) // malformed: the validator says so
}

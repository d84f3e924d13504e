/**
 * The strict validator of what a client sends: one pure function over one frame, checking
 * it as MQTT 3.1.1 and 5.0 require before aedes (whose mqtt-packet decoding is lenient)
 * sees it. A frame it refuses closes the connection (see `Wire`), whatever
 * `mqtt.strict_mode` says; strict mode adds the checks beyond the standard (control
 * characters in strings, payloads that say they are UTF-8).
 *
 * Reason codes follow MQTT 5.0 sections 1.2 and 4.13.1: the code the standard's text gives
 * for a violation where it gives one (cited beside each check: "is a Malformed Packet",
 * "It is a Protocol Error", "uses DISCONNECT with Reason Code 0x94" ...); otherwise by the
 * definitions of 1.2, 0x81 Malformed Packet for a packet that "cannot be parsed" (lengths,
 * missing fields) and 0x82 Protocol Error for one that parses but holds "data that is not
 * allowed by the protocol" (packet id 0, a wildcard in a topic name, an invalid reason
 * code). docs/mqtt.md has the table ("Protocol errors and their reason codes").
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

/** Required low nibble of the first byte per packet type from a client (2.1.3 Table 2-2); -1 = any (PUBLISH), -2 = never sent by a client. */
const FLAGS = [-2, 0, -2, -1, 0, 0, 2, 0, 2, -2, 2, -2, 0, -2, 0, 0]

/** Valid reason codes (v5) of PUBACK/PUBREC, PUBREL/PUBCOMP, DISCONNECT and AUTH (3.4.2.1, 3.5.2.1, 3.6.2.1, 3.7.2.1, 3.14.2.1, 3.15.2.1). */
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
    // 3.12.2, 3.12.3: no variable header, no payload; bytes that fit no field cannot be parsed (1.2)
    case PINGREQ: return len === 0 ? null : problem(MALFORMED, 'PINGREQ with a body')
    case DISCONNECT:
      // 3.1.1: a DISCONNECT has no variable header (3.14.2 of 3.1.1)
      if (!v5 || len === 0) return len === 0 ? null : problem(MALFORMED, 'DISCONNECT with a body')
      // [MQTT-3.14.2-1] one of the DISCONNECT reason codes: another value is not allowed data, a Protocol Error (1.2)
      if (!DISCONNECT_CODES.has(buf[body])) return problem(PROTOCOL_ERROR, `DISCONNECT reason code 0x${buf[body].toString(16)} [MQTT-3.14.2-1]`)
      return len === 1 ? null : propertiesToEnd(buf, body + 1, end, DISCONNECT_PROPS, strict)
    case AUTH:
      if (len === 0) return null
      // [MQTT-3.15.2-1] one of the Authenticate reason codes (1.2: a Protocol Error)
      if (!AUTH_CODES.has(buf[body])) return problem(PROTOCOL_ERROR, `AUTH reason code 0x${buf[body].toString(16)} [MQTT-3.15.2-1]`)
      return len === 1 ? null : propertiesToEnd(buf, body + 1, end, AUTH_PROPS, strict)
    default: { // PUBACK, PUBREC, PUBREL, PUBCOMP
      if (len < 2) return problem(MALFORMED, 'acknowledgement without a packet identifier')
      // an acknowledgement carries the id of the PUBLISH/PUBREL it answers [MQTT-2.2.1-5], never 0
      // [MQTT-2.2.1-4]: not allowed data, a Protocol Error (1.2)
      if (buf.readUInt16BE(body) === 0) return problem(PROTOCOL_ERROR, 'packet identifier 0 [MQTT-2.2.1-5]')
      if (!v5 || len === 2) return len === 2 ? null : problem(MALFORMED, 'acknowledgement longer than its packet identifier')
      const codes = type === PUBREL || type === PUBCOMP ? REL_CODES : ACK_CODES
      // [MQTT-3.4.2-1] [MQTT-3.5.2-1] [MQTT-3.6.2-1] [MQTT-3.7.2-1] one of the packet's reason codes (1.2: a Protocol Error)
      if (!codes.has(buf[body + 2])) return problem(PROTOCOL_ERROR, `acknowledgement reason code 0x${buf[body + 2].toString(16)}`)
      return len === 3 ? null : propertiesToEnd(buf, body + 3, end, ACK_PROPS, strict)
    }
  }
}

/**
 * The first byte alone: packet type and reserved flags [MQTT-2.1.3-1]. The scan checks it
 * as soon as the byte arrives, so a stream of garbage is refused without waiting for the
 * body its bogus length announces.
 */
export function checkHeader (b0: number, version: number): PacketProblem | null {
  const type = b0 >> 4
  const flags = FLAGS[type]
  // 2.1.2 Table 2-1: type 0 is "Reserved, Forbidden" (and 15 in 3.1.1): no packet to parse, 0x81
  if (type === 0 || (type === AUTH && version !== 5 && version !== 0)) return problem(MALFORMED, `reserved packet type ${type}`)
  // 2.1.2 Table 2-1: CONNACK, SUBACK, UNSUBACK, PINGRESP flow Server to Client only: a
  // parsed packet not allowed from a client, a Protocol Error (1.2)
  if (flags === -2) return problem(PROTOCOL_ERROR, `packet type ${type} is sent by servers only`)
  // [MQTT-2.1.3-1] "If invalid flags are received it is a Malformed Packet"; likewise
  // [MQTT-3.6.1-1] [MQTT-3.8.1-1] [MQTT-3.10.1-1] [MQTT-3.14.1-1] [MQTT-3.15.1-1]
  if (flags >= 0 && (b0 & 15) !== flags) return problem(MALFORMED, `packet type ${type} with reserved flags 0x${(b0 & 15).toString(16)} [MQTT-2.1.3-1]`)
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
  // a field missing or longer than the packet cannot be parsed (1.2): 0x81
  if (p + 2 > end) { out.problem = problem(MALFORMED, `${what} missing`); return -1 }
  const next = p + 2 + buf.readUInt16BE(p)
  if (next > end) { out.problem = problem(MALFORMED, `${what} runs past the end of the packet`); return -1 }
  const flags = scanUtf8(buf, p + 2, next)
  // [MQTT-1.5.4-1] [MQTT-1.5.4-2] ill-formed UTF-8 or U+0000 "is a Malformed Packet"
  if ((flags & UTF8_BAD) !== 0) { out.problem = problem(MALFORMED, `${what} is not well-formed UTF-8 [MQTT-1.5.4-1]`); return -1 }
  // 1.5.4: a receiver "MAY treat it as a Malformed Packet" (SHOULD NOT be sent); strict mode does
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
  // [MQTT-3.1.2-1] the name must be "MQTT" ("MQIsdp" for 3.1): "it MAY send a CONNACK packet
  // with Reason Code of 0x84 (Unsupported Protocol Version)" (5.0); 3.1.1 "MAY disconnect"
  if (name !== 'MQTT' && name !== 'MQIsdp') return problem(UNSUPPORTED_PROTOCOL_VERSION, `protocol name ${JSON.stringify(name)} [MQTT-3.1.2-1]`)
  if (p + 4 > end) return problem(MALFORMED, 'CONNECT shorter than its variable header')
  const level = buf[p] & 0x7f // bit 7: bridge mode
  // [MQTT-3.1.2-2] 0x84 Unsupported Protocol Version; answered with CONNACK 0x01 in 3.1.1 form by the caller
  if (level < 3 || level > 5) return problem(UNSUPPORTED_PROTOCOL_VERSION, `protocol level ${buf[p]} [MQTT-3.1.2-2]`)
  const v5 = level === 5
  const f = buf[p + 1]
  // [MQTT-3.1.2-3] "If the reserved flag is not 0 it is a Malformed Packet"
  if ((f & 1) !== 0) return problem(MALFORMED, 'CONNECT reserved flag set [MQTT-3.1.2-3]')
  const will = (f & 4) !== 0
  const willQos = (f >> 3) & 3
  // [MQTT-3.1.2-12] "A value of 3 (0x03) is a Malformed Packet"
  if (willQos === 3) return problem(MALFORMED, 'Will QoS 3 [MQTT-3.1.2-12]')
  // [MQTT-3.1.2-11] [MQTT-3.1.2-13] Will QoS and Will Retain are 0 without a Will; the
  // standard names no code: parsed, not allowed, a Protocol Error (1.2)
  if (!will && (willQos !== 0 || (f & 0x20) !== 0)) return problem(PROTOCOL_ERROR, 'Will QoS or Will Retain without a Will [MQTT-3.1.2-11] [MQTT-3.1.2-13]')
  const username = (f & 0x80) !== 0
  const password = (f & 0x40) !== 0
  // 3.1.1 only [MQTT-3.1.2-22 of 3.1.1]: closed without a CONNACK (3.1.1 has no code for it); 5.0 allows it (3.1.2.9)
  if (!v5 && password && !username) return problem(MALFORMED, 'password without a user name [MQTT-3.1.2-22]')
  p += 4 // level, flags, keep alive
  if (v5) {
    p = checkProperties(buf, p, end, CONNECT_PROPS, strict)
    if (p < 0) return seen.problem
    // 3.1.2.11.10 "It is a Protocol Error to include Authentication Data if there is no Authentication Method"
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
    // [MQTT-3.1.3-11] a topic name: not empty [MQTT-4.7.3-1], no wildcards [MQTT-4.7.0-1]; no code
    // named (CONNACK 0x90 is for a name "not malformed, but not accepted"): a Protocol Error (1.2)
    if (p === topicStart + 2 || (topicFlags & UTF8_WILDCARD) !== 0) return problem(PROTOCOL_ERROR, 'Will Topic is not a valid topic name [MQTT-3.1.3-11]')
    const payloadStart = p
    p = skipBinary(buf, p, end)
    if (p < 0) return problem(MALFORMED, 'Will Payload runs past the end of the packet')
    // 3.1.3.2.3 the Server "MAY validate ... and if it is not send a CONNACK with the Reason Code of 0x99"
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
  // [MQTT-3.3.1-4] "it is a Malformed Packet. Use DISCONNECT with Reason Code 0x81"
  if (qos === 3) return problem(MALFORMED, 'PUBLISH with QoS 3 [MQTT-3.3.1-4]')
  // [MQTT-3.3.1-2] DUP is 0 at QoS 0: invalid fixed-header flags, "a Malformed Packet" (2.1.3)
  if (qos === 0 && (b0 & 8) !== 0) return problem(MALFORMED, 'QoS 0 PUBLISH with DUP set [MQTT-3.3.1-2]')
  if (body + 2 > end) return problem(MALFORMED, 'PUBLISH without a topic')
  const topicEnd = body + 2 + buf.readUInt16BE(body)
  if (topicEnd > end) return problem(MALFORMED, 'PUBLISH topic longer than the packet')
  const flags = scanUtf8(buf, body + 2, topicEnd)
  if ((flags & UTF8_BAD) !== 0) return problem(MALFORMED, 'topic name is not well-formed UTF-8 [MQTT-1.5.4-1]')
  // [MQTT-3.3.2-2] no wildcards in a topic name. No code named; 0x90 Topic Name invalid is for a
  // name that "is correctly formed, but is not accepted" (3.14.2.1): a Protocol Error (1.2)
  if ((flags & UTF8_WILDCARD) !== 0) return problem(PROTOCOL_ERROR, 'wildcard in a topic name [MQTT-3.3.2-2]')
  if (strict && (flags & UTF8_CONTROL) !== 0) return problem(MALFORMED, 'control character in a topic name (mqtt.strict_mode)')
  let p = topicEnd
  if (qos > 0) {
    if (p + 2 > end) return problem(MALFORMED, 'PUBLISH without a packet identifier')
    // [MQTT-2.2.1-3] a non-zero Packet Identifier: not allowed data, a Protocol Error (1.2)
    if (buf.readUInt16BE(p) === 0) return problem(PROTOCOL_ERROR, 'PUBLISH with packet identifier 0 [MQTT-2.2.1-3]')
    p += 2
  }
  let payloadFormat = -1
  let alias = false
  if (v5) {
    if (p >= end) return problem(MALFORMED, 'PUBLISH without a property length')
    if (buf[p] === 0) {
      p++ // no properties: the common case, nothing to walk
      seen.topicAlias = -1 // what the wire reads after this check
    } else {
      p = checkProperties(buf, p, end, PUBLISH_PROPS, strict)
      if (p < 0) return seen.problem
      payloadFormat = seen.payloadFormat
      alias = seen.topicAlias > 0
    }
  }
  // [MQTT-4.7.3-1] a topic name is at least one character; 3.3.2.1 "It is a Protocol Error if
  // the Topic Name is zero length and there is no Topic Alias"
  if (topicEnd === body + 2 && !alias) return problem(PROTOCOL_ERROR, 'PUBLISH with an empty topic name and no Topic Alias')
  // 3.3.2.3.2 "The receiver MAY validate ... send a PUBACK, PUBREC, or DISCONNECT with Reason Code of 0x99"
  if (strict && payloadFormat === 1 && end <= buf.length && !isUtf8Range(buf, p, end)) {
    return problem(PAYLOAD_FORMAT_INVALID, 'payload is not UTF-8 as its Payload Format Indicator says [MQTT-3.3.2-4]')
  }
  return null
}

function checkSubscribe (buf: Buffer, body: number, end: number, subscribe: boolean, v5: boolean, strict: boolean): PacketProblem | null {
  const what = subscribe ? 'SUBSCRIBE' : 'UNSUBSCRIBE'
  if (body + 2 > end) return problem(MALFORMED, `${what} without a packet identifier`)
  // [MQTT-2.2.1-3] a non-zero Packet Identifier (1.2: a Protocol Error)
  if (buf.readUInt16BE(body) === 0) return problem(PROTOCOL_ERROR, `${what} with packet identifier 0 [MQTT-2.2.1-3]`)
  let p = body + 2
  if (v5) {
    p = checkProperties(buf, p, end, subscribe ? SUBSCRIBE_PROPS : UNSUBSCRIBE_PROPS, strict)
    if (p < 0) return seen.problem
  }
  // [MQTT-3.8.3-2] [MQTT-3.10.3-2] at least one topic filter: "with no Payload is a Protocol Error"
  if (p === end) return problem(PROTOCOL_ERROR, `${what} without a topic filter`)
  const out = { problem: null as PacketProblem | null }
  while (p < end) {
    const start = p
    p = readString(buf, p, end, 'topic filter', strict, out)
    if (p < 0) return out.problem
    // [MQTT-4.7.3-1] topic filters are at least one character long (no code named: 1.2, a Protocol Error)
    if (p === start + 2) return problem(PROTOCOL_ERROR, 'empty topic filter [MQTT-4.7.3-1]')
    if (!subscribe) continue
    if (p >= end) return problem(MALFORMED, 'topic filter without subscription options')
    const options = buf[p++]
    // [MQTT-3.8.3-5] "MUST treat a SUBSCRIBE packet as malformed if any of Reserved bits ... are non-zero"
    if ((options & (v5 ? 0xc0 : 0xfc)) !== 0) return problem(MALFORMED, 'subscription options with reserved bits set [MQTT-3.8.3-5]')
    // 5.0 3.8.3.1 "It is a Protocol Error if the Maximum QoS field has the value 3"; 3.1.1 calls it malformed [MQTT-3-8.3-4]
    if ((options & 3) === 3) return problem(v5 ? PROTOCOL_ERROR : MALFORMED, 'subscription with QoS 3 [3.8.3.1]')
    // 3.8.3.1 "It is a Protocol Error to send a Retain Handling value of 3"
    if (v5 && (options >> 4) === 3) return problem(PROTOCOL_ERROR, 'Retain Handling 3 [3.8.3.1]')
    // [MQTT-3.8.3-4] "It is a Protocol Error to set the No Local bit to 1 on a Shared Subscription"
    if (v5 && (options & 4) !== 0 && p - start - 3 >= 7 && buf.toString('latin1', start + 2, start + 9) === '$share/') {
      return problem(PROTOCOL_ERROR, 'No Local on a shared subscription [MQTT-3.8.3-4]')
    }
  }
  return null
}

/**
 * The Session Expiry Interval of a whole, already validated v5 CONNECT or DISCONNECT frame
 * (`type`, body at [body, end)); -1 when it carries none. For the rules that span packets
 * (3.14.2.2.2); off the per-message path.
 */
export function sessionExpiryOf (buf: Buffer, body: number, end: number, type: number): number {
  let p: number
  if (type === CONNECT) {
    p = body + 2 + buf.readUInt16BE(body) + 4 // protocol name, level, flags, keep alive
    if (checkProperties(buf, p, end, CONNECT_PROPS, false) < 0) return -1
  } else {
    if (end - body < 2) return -1
    if (checkProperties(buf, body + 1, end, DISCONNECT_PROPS, false) < 0) return -1
  }
  return seen.sessionExpiry
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

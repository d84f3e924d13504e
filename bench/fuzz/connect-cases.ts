/**
 * The connect door's packet source: one CONNECT per connection (MQTT 3.1, 3.1.1 or 5.0),
 * valid but for one field or property, and what the standard says the broker must answer:
 * CONNACK 0 for an edge that is allowed (keep alive 0, an empty client id with a clean
 * start, U+FFFF, every Will property), the standard's CONNACK code and a close for one that
 * is not (reserved flag, Will QoS 3, Receive Maximum 0, a property twice, a field past the
 * end ...). Reason codes: MQTT 5 section 3.2.2.2 and 4.13; 3.1.1 section 3.2.2.3.
 */
import { encodeVarint } from '../../node/mqtt/wire-bytes.js'
import { Random, frame, str, u16, u32, userProperty, connectBody, connectFlags, disconnect, type ConnectFields } from './packets.js'
import type { Expectation, Script, ScriptContext } from './driver.js'

const MALFORMED = [0x81]
const PROTOCOL_ERROR = [0x82]
/** Where MQTT 5 says MUST without naming the code: Malformed Packet or Protocol Error (section 4.13). */
const MALFORMED_OR_PROTOCOL = [0x81, 0x82]
/** Strings that are not well-formed UTF-8, or hold U+0000 [MQTT-1.5.4-1] [MQTT-1.5.4-2]. */
const BAD_UTF8 = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x00], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80]].map(b => Buffer.from(b))

/** One case: changes `f` (a valid CONNECT at level `v`) and says what must follow; may return raw frame bytes instead. */
type Case = (r: Random, v: 3 | 4 | 5, f: ConnectFields, strict: boolean) => { expect: Expectation, raw?: Buffer, ended?: boolean } | null

const accept = (name: string): { expect: Expectation } => ({ expect: { kind: 'accept', name } })
const refuse = (name: string, v5: number[] | null, v4: number[] | null = null, more: { silent?: boolean, v4Required?: boolean } = {}): { expect: Expectation } =>
  ({ expect: { kind: 'refuse', name, v5, v4, ...more } })
const either = (name: string): { expect: Expectation } => ({ expect: { kind: 'survive', name } })

function prop (id: number, value: Buffer): Buffer { return Buffer.concat([Buffer.from([id]), value]) }
function byteProp (id: number, n: number): Buffer { return Buffer.from([id, n]) }

/** Every valid CONNECT property with a random legal value (Authentication Method excepted: not offered). */
const CONNECT_PROPS: Array<[string, (r: Random) => Buffer]> = [
  ['session-expiry', r => prop(0x11, u32(r.pick([0, 1, 60, 7200, 0xffffffff])))],
  ['receive-maximum', r => prop(0x21, u16(r.pick([1, 2, 100, 65535])))],
  ['maximum-packet-size', r => prop(0x27, u32(r.pick([1024, 65536, 268435455, 0xffffffff])))],
  ['topic-alias-maximum', r => prop(0x22, u16(r.pick([0, 1, 10, 65535])))],
  ['request-response-information', r => byteProp(0x19, r.int(2))],
  ['request-problem-information', r => byteProp(0x17, r.int(2))],
  ['user-property', r => userProperty(r)]
]

/** Every Will property with a random legal value. */
const WILL_PROPS: Array<[string, (r: Random) => Buffer]> = [
  ['payload-format', r => byteProp(0x01, r.int(2))],
  ['message-expiry', r => prop(0x02, u32(r.pick([0, 1, 3600, 0xffffffff])))],
  ['content-type', r => prop(0x03, str(r.pick(['text/plain', '', 'application/json; charset=utf-8'])))],
  ['response-topic', r => prop(0x08, str(r.pick(['fuzz/reply', 'a', 'fuzz/é/x'])))],
  ['correlation-data', r => prop(0x09, str(r.bytes(r.int(40))))],
  ['will-delay', r => prop(0x18, u32(r.pick([0, 1, 3600])))],
  ['user-property', r => userProperty(r)]
]

/** Property ids valid elsewhere but not in a CONNECT / a Will, with a value of their type. */
const NOT_IN_CONNECT = [byteProp(0x01, 0), prop(0x02, u32(5)), prop(0x23, u16(1)), Buffer.from([0x0b, 0x01]), byteProp(0x24, 1), prop(0x1f, str('x')), prop(0x12, str('id')), prop(0x18, u32(1))]
const NOT_IN_WILL = [prop(0x11, u32(5)), prop(0x21, u16(5)), prop(0x23, u16(1)), Buffer.from([0x0b, 0x01]), prop(0x15, str('SCRAM')), byteProp(0x17, 1), prop(0x27, u32(1024))]

function withWill (r: Random, f: ConnectFields, properties?: Buffer): void {
  f.will = { qos: r.int(3), retain: r.chance(0.3), properties, topic: Buffer.from(`fuzz/will/${r.int(10)}`), payload: r.bytes(r.int(20)) }
}

/** The cases, each a field or property of CONNECT. */
const CASES: Array<[string, Case]> = [
  // --- protocol name and level
  ['protocol-name', (r, v, f) => {
    f.protocolName = Buffer.from(r.pick(['MQTX', 'mqtt', '', 'MQIsdpX', 'MQTT\u0000', 'HTTP']))
    // [MQTT-3.1.2-1] close, or (v5) CONNACK 0x84 first; 3.1.1 allows a CONNACK 0x01 too
    return refuse('protocol-name', [0x84, 0x81], [0x01], { silent: true })
  }],
  ['protocol-level', (r, v, f) => {
    f.level = r.pick([0, 1, 2, 6, 7, 0x7f, 0xff])
    // [MQTT-3.1.2-2] CONNACK 0x01 (3.1.1 form) or 0x84, then close
    return { expect: { kind: 'refuse', name: 'protocol-level', v5: [0x01, 0x84], v4: [0x01, 0x84], silent: true } }
  }],
  ['name-level-mismatch', (r, v, f) => { f.protocolName = Buffer.from(v === 3 ? 'MQTT' : 'MQIsdp'); return either('name-level-mismatch') }],
  ['bridge-bit', (r, v, f) => { f.level |= 0x80; return either('bridge-bit') }],
  // --- flags
  ['reserved-flag', (r, v, f) => { f.flags = connectFlags(f) | 1; return refuse('reserved-flag', MALFORMED) }], // [MQTT-3.1.2-3]
  ['will-qos-3', (r, v, f) => { withWill(r, f); f.flags = connectFlags(f) | 0x18; return refuse('will-qos-3', MALFORMED) }], // [MQTT-3.1.2-14]
  ['will-qos-without-will', (r, v, f) => { f.will = undefined; f.flags = connectFlags(f) | (r.pick([1, 2]) << 3); return refuse('will-qos-without-will', MALFORMED_OR_PROTOCOL) }], // [MQTT-3.1.2-11] (5.0 names no code)
  ['will-retain-without-will', (r, v, f) => { f.will = undefined; f.flags = connectFlags(f) | 0x20; return refuse('will-retain-without-will', MALFORMED_OR_PROTOCOL) }], // [MQTT-3.1.2-13] (5.0 names no code)
  ['will-qos-retain', (r, v, f) => { withWill(r, f); return accept('will-qos-retain') }],
  ['will-flag-without-fields', (r, v, f) => { f.will = undefined; f.username = undefined; f.password = undefined; f.flags = connectFlags(f) | 0x04; return refuse('will-flag-without-fields', MALFORMED) }],
  ['password-without-username', (r, v, f) => {
    f.username = undefined
    f.password = r.bytes(r.int(10))
    // 3.1.1: [MQTT-3.1.2-22]; 5.0 allows a password alone (3.1.2.9)
    return v === 5 ? accept('password-without-username') : refuse('password-without-username', null)
  }],
  ['username-flag-without-field', (r, v, f) => { f.username = undefined; f.password = undefined; f.flags = connectFlags(f) | 0x80; return refuse('username-flag-without-field', MALFORMED) }],
  ['password-flag-without-field', (r, v, f) => { f.username = Buffer.from('u'); f.password = undefined; f.flags = connectFlags(f) | 0x40; return refuse('password-flag-without-field', MALFORMED) }],
  ['username-without-flag', (r, v, f) => { f.username = undefined; f.password = undefined; f.tail = str('user'); return refuse('username-without-flag', MALFORMED) }],
  ['username-and-password', (r, v, f) => { f.username = Buffer.from(r.pick(['u', '', 'user/é', 'x'.repeat(300)])); f.password = r.bytes(r.int(300)); return accept('username-and-password') }],
  ['username-bad-utf8', (r, v, f) => { f.username = Buffer.concat([Buffer.from('u'), r.pick(BAD_UTF8)]); return refuse('username-bad-utf8', MALFORMED) }],
  // --- keep alive
  ['keepalive', (r, v, f) => { f.keepalive = r.pick([0, 1, 2, 65535]); return accept('keepalive') }],
  // --- client id
  ['client-id-empty-clean', (r, v, f) => { f.clientId = Buffer.alloc(0); f.clean = true; return v === 3 ? either('client-id-empty-clean') : accept('client-id-empty-clean') }],
  ['client-id-empty-persistent', (r, v, f) => {
    f.clientId = Buffer.alloc(0)
    f.clean = false
    // 3.1.1: CONNACK 0x02 then close [MQTT-3.1.3-8]; 5.0: assigned, allowed (3.1.3.1)
    return v === 4 ? refuse('client-id-empty-persistent', null, [0x02], { v4Required: true }) : v === 5 ? accept('client-id-empty-persistent') : either('client-id-empty-persistent')
  }],
  ['client-id-long', (r, v, f) => { f.clientId = Buffer.concat([f.clientId, Buffer.from('-'), Buffer.alloc(r.pick([100, 1000, 65000]), 'x')]).subarray(0, 65535); return accept('client-id-long') }],
  ['client-id-bad-utf8', (r, v, f) => { f.clientId = Buffer.concat([f.clientId, r.pick(BAD_UTF8)]); return refuse('client-id-bad-utf8', MALFORMED) }],
  ['client-id-noncharacter', (r, v, f) => { f.clientId = Buffer.concat([f.clientId, Buffer.from(r.pick(['\uffff', '\ufeff', '\ufffe', 'é€😀']))]); return accept('client-id-noncharacter') }],
  ['client-id-control', (r, v, f, strict) => {
    f.clientId = Buffer.concat([f.clientId, Buffer.from([r.pick([0x01, 0x1f, 0x7f])])])
    // SHOULD NOT [MQTT-1.5.4-2]: refused only by strict mode
    return strict ? refuse('client-id-control', MALFORMED) : accept('client-id-control')
  }],
  ['client-id-past-end', (r, v, f) => {
    f.username = undefined; f.password = undefined; f.will = undefined
    const body = connectBody(f)
    body.writeUInt16BE(f.clientId.length + 1 + r.int(100), body.length - f.clientId.length - 2)
    return { ...refuse('client-id-past-end', MALFORMED), raw: frame(0x10, body) }
  }],
  // --- the packet as a whole
  ['truncated', (r, v, f) => {
    const body = connectBody(f)
    return { ...refuse('truncated', MALFORMED, null, { silent: true }), raw: frame(0x10, body.subarray(0, r.int(body.length))) }
  }],
  ['trailing-bytes', (r, v, f) => { f.tail = r.bytes(1 + r.int(8)); return refuse('trailing-bytes', MALFORMED) }],
  ['header-flags', (r, v, f) => ({ ...refuse('header-flags', null, null, { silent: true }), raw: frame(0x10 | (1 + r.int(15)), connectBody(f)) })],
  ['pipelined-disconnect', (r, v, f) => ({ ...accept('pipelined-disconnect'), raw: Buffer.concat([frame(0x10, connectBody(f)), disconnect(r, v === 5 ? 5 : 4)]), ended: true })]
]

/** MQTT 5 only: properties. */
const V5_CASES: Array<[string, Case]> = [
  ['connect-property', (r, v, f) => {
    const picks = CONNECT_PROPS.filter(() => r.chance(0.4))
    f.properties = Buffer.concat(picks.map(([, make]) => make(r)))
    return accept('connect-property')
  }],
  ['receive-maximum-0', (r, v, f) => { f.properties = prop(0x21, u16(0)); return refuse('receive-maximum-0', PROTOCOL_ERROR) }], // 3.1.2.11.3
  ['maximum-packet-size-0', (r, v, f) => { f.properties = prop(0x27, u32(0)); return refuse('maximum-packet-size-0', PROTOCOL_ERROR) }], // 3.1.2.11.4
  ['request-info-value', (r, v, f) => { f.properties = byteProp(r.pick([0x17, 0x19]), 2 + r.int(254)); return refuse('request-info-value', PROTOCOL_ERROR) }], // 3.1.2.11.6/7
  ['duplicate-property', (r, v, f) => {
    const [, make] = r.pick(CONNECT_PROPS.filter(([n]) => n !== 'user-property'))
    f.properties = Buffer.concat([make(r), make(r)])
    return refuse('duplicate-property', PROTOCOL_ERROR) // [MQTT-2.2.2.2]
  }],
  ['many-user-properties', (r, v, f) => { f.properties = Buffer.concat(Array.from({ length: 1 + r.int(200) }, () => userProperty(r))); return accept('many-user-properties') }],
  ['user-property-bad-utf8', (r, v, f) => { f.properties = Buffer.concat([Buffer.from([0x26]), str(r.pick(BAD_UTF8)), str('v')]); return refuse('user-property-bad-utf8', MALFORMED) }],
  ['property-not-in-connect', (r, v, f) => { f.properties = r.pick(NOT_IN_CONNECT); return refuse('property-not-in-connect', MALFORMED) }],
  ['unknown-property', (r, v, f) => { f.properties = Buffer.from([r.pick([0x00, 0x04, 0x2b, 0x7f, 0xff]), 0, 0]); return refuse('unknown-property', MALFORMED) }],
  ['property-past-end', (r, v, f) => { f.properties = Buffer.from([0x11, 0, 0]); return refuse('property-past-end', MALFORMED) }],
  ['property-length-past-packet', (r, v, f) => { f.properties = Buffer.alloc(0); f.propertyLength = encodeVarint(1000 + r.int(1000)); return refuse('property-length-past-packet', MALFORMED) }],
  ['property-length-not-varint', (r, v, f) => { f.properties = Buffer.alloc(0); f.propertyLength = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x01]); return refuse('property-length-not-varint', MALFORMED) }],
  ['authentication-method', (r, v, f) => { f.properties = Buffer.concat([prop(0x15, str(r.pick(['SCRAM-SHA-1', 'x']))), r.chance(0.5) ? prop(0x16, str(r.bytes(8))) : Buffer.alloc(0)]); return refuse('authentication-method', [0x8c]) }],
  ['authentication-data-alone', (r, v, f) => { f.properties = prop(0x16, str(r.bytes(8))); return refuse('authentication-data-alone', PROTOCOL_ERROR) }], // 3.1.2.11.10
  ['will-property', (r, v, f) => {
    withWill(r, f, Buffer.concat(WILL_PROPS.filter(() => r.chance(0.4)).map(([, make]) => make(r))))
    return accept('will-property')
  }],
  ['will-property-duplicate', (r, v, f) => {
    const [, make] = r.pick(WILL_PROPS.filter(([n]) => n !== 'user-property'))
    withWill(r, f, Buffer.concat([make(r), make(r)]))
    return refuse('will-property-duplicate', PROTOCOL_ERROR)
  }],
  ['will-property-not-in-will', (r, v, f) => { withWill(r, f, r.pick(NOT_IN_WILL)); return refuse('will-property-not-in-will', MALFORMED) }],
  ['will-payload-format-value', (r, v, f) => { withWill(r, f, byteProp(0x01, 2 + r.int(254))); return refuse('will-payload-format-value', PROTOCOL_ERROR) }],
  ['will-response-topic-wildcard', (r, v, f) => { withWill(r, f, prop(0x08, str(r.pick(['a/#', '+', 'a/+/b'])))); return refuse('will-response-topic-wildcard', PROTOCOL_ERROR) }],
  ['will-property-wrong-type', (r, v, f) => {
    // a string where a four-byte integer goes, or the reverse: the lengths no longer add up
    withWill(r, f, r.pick([Buffer.concat([Buffer.from([0x02]), str('abc')]), Buffer.from([0x03, 0, 0, 0, 9]), Buffer.from([0x18, 1])]))
    return refuse('will-property-wrong-type', null)
  }],
  ['will-payload-format-utf8', (r, v, f, strict) => {
    withWill(r, f, byteProp(0x01, 1))
    f.will!.payload = Buffer.from([0xff, 0xfe])
    return strict ? refuse('will-payload-format-utf8', [0x99]) : accept('will-payload-format-utf8')
  }]
]

/** 3.1.1 and 5.0: the Will's topic and payload. */
const WILL_CASES: Array<[string, Case]> = [
  ['will-topic-empty', (r, v, f) => { withWill(r, f); f.will!.topic = Buffer.alloc(0); return refuse('will-topic-empty', [0x82, 0x90]) }],
  ['will-topic-wildcard', (r, v, f) => { withWill(r, f); f.will!.topic = Buffer.from(r.pick(['fuzz/#', '+', 'fuzz/+/x'])); return refuse('will-topic-wildcard', [0x82, 0x90]) }],
  ['will-topic-bad-utf8', (r, v, f) => { withWill(r, f); f.will!.topic = Buffer.concat([Buffer.from('fuzz/'), r.pick(BAD_UTF8)]); return refuse('will-topic-bad-utf8', MALFORMED) }],
  ['will-payload-past-end', (r, v, f) => {
    withWill(r, f); f.username = undefined; f.password = undefined
    const body = connectBody(f)
    body.writeUInt16BE(f.will!.payload.length + 1 + r.int(50), body.length - f.will!.payload.length - 2)
    return { ...refuse('will-payload-past-end', MALFORMED), raw: frame(0x10, body) }
  }],
  ['will-payload-large', (r, v, f) => { withWill(r, f); f.will!.payload = r.bytes(r.pick([1000, 65535])); return accept('will-payload-large') }]
]

/** A valid CONNECT's fields at level `v`, with some of the optional parts. */
function baseFields (r: Random, v: 3 | 4 | 5, clientId: string): ConnectFields {
  const f: ConnectFields = { protocolName: Buffer.from(v === 3 ? 'MQIsdp' : 'MQTT'), level: v, clean: true, keepalive: 60, clientId: Buffer.from(clientId) }
  if (v === 5) f.properties = Buffer.alloc(0)
  if (r.chance(0.2)) { f.username = Buffer.from(`user${r.int(10)}`); if (r.chance(0.5)) f.password = r.bytes(r.int(12)) }
  return f
}

/** One connection's script: a CONNECT with one case, then (accepted) a DISCONNECT. */
export function connectScript (r: Random, ctx: ScriptContext): Script {
  const v = r.pick([3, 4, 4, 5, 5, 5] as const)
  const f = baseFields(r, v, `fc-${ctx.seed}-${ctx.n}`)
  const cases = v === 5 ? [...CASES, ...WILL_CASES, ...V5_CASES, ...V5_CASES] : [...CASES, ...WILL_CASES]
  const [, make] = r.pick(cases)
  const made = make(r, v, f, ctx.strict)!
  const connect = made.raw ?? frame(0x10, connectBody(f))
  // an accepted CONNECT says goodbye; an 'either' one (refused or not) is just dropped
  const final = made.ended !== true && made.expect.kind === 'accept' ? [disconnect(r, v === 5 ? 5 : 4)] : []
  return { version: v, frames: [connect], final, expect: made.expect }
}

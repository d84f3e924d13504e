/**
 * The fuzzer's mutations. Two kinds: protocol errors the standard defines (the broker MUST
 * close the connection, and the driver checks it does), and blind ones (bit flips,
 * truncation, wrong lengths, garbage) whose outcome is unknown, checked only for the
 * node's survival.
 */
import { encodeVarint } from '../../node/mqtt/wire-bytes.js'
import { Random, frame, str, propertyBlock, publish, subscribe, unsubscribe, connect, ack, auth, PINGREQ } from './packets.js'

/** One mutated frame (or a few bytes that are not one). */
export interface Mutation {
  /** What was done, e.g. `qos3` or `bitflip`. */
  name: string
  bytes: Buffer
  /** True when the bytes are a protocol error the broker must close the connection for. */
  definite: boolean
}

type Version = 4 | 5

const BAD_UTF8 = [
  Buffer.from([0xff]), Buffer.from([0xc0, 0x80]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0x00]), Buffer.from([0xe2, 0x82])
]

/** A PUBLISH with a raw topic. */
function publishRaw (version: Version, topic: Buffer, b0 = 0x30, id = 1, props: Buffer = Buffer.alloc(0)): Buffer {
  const parts = [str(topic)]
  if ((b0 & 6) !== 0) parts.push(Buffer.from([id >> 8, id & 255]))
  if (version === 5) parts.push(propertyBlock(props))
  parts.push(Buffer.from('x'))
  return frame(b0, Buffer.concat(parts))
}

/** Protocol errors valid for both versions (after a CONNECT). */
const COMMON: Array<[string, (r: Random, v: Version) => Buffer]> = [
  ['qos3', (r, v) => { const f = publish(r, v, 1, 1 + r.int(1000)); f[0] |= 6; return f }],
  ['dup-qos0', (r, v) => { const f = publish(r, v, 0, 0); f[0] |= 8; return f }],
  ['reserved-flags', (r, v) => {
    const f = r.pick([() => ack(r, v, 4, 1), () => ack(r, v, 6, 1), () => subscribe(r, v, 1), () => unsubscribe(r, v, 1), () => Buffer.from(PINGREQ)])()
    f[0] ^= 1 << r.int(4)
    return f
  }],
  ['packet-id-0', (r, v) => r.pick([() => publish(r, v, 1 + r.int(2), 0), () => subscribe(r, v, 0), () => unsubscribe(r, v, 0), () => ack(r, v, r.pick([4, 5, 6, 7] as const), 0)])()],
  ['no-packet-id', (r) => Buffer.from([r.pick([0x40, 0x50, 0x62, 0x70]), 0x00])],
  ['bad-utf8-topic', (r, v) => publishRaw(v, Buffer.concat([Buffer.from('fuzz/'), r.pick(BAD_UTF8), Buffer.from('/x')]), 0x30 | (r.int(2) << 1))],
  ['wildcard-topic', (r, v) => publishRaw(v, Buffer.from(r.pick(['fuzz/+/x', 'fuzz/#', '#', 'a+b'])), 0x30 | (r.int(2) << 1) | r.int(2))],
  ['empty-topic', (r, v) => publishRaw(v, Buffer.alloc(0))],
  ['bad-utf8-filter', (r, v) => frame(0x82, Buffer.concat([Buffer.from([0, 1]), v === 5 ? Buffer.from([0]) : Buffer.alloc(0), str(Buffer.concat([Buffer.from('fuzz/'), r.pick(BAD_UTF8)])), Buffer.from([0])]))],
  ['empty-subscribe', (_r, v) => frame(0x82, Buffer.from(v === 5 ? [0, 1, 0] : [0, 1]))],
  ['empty-unsubscribe', (_r, v) => frame(0xa2, Buffer.from(v === 5 ? [0, 1, 0] : [0, 1]))],
  ['subscription-options', (r, v) => frame(0x82, Buffer.concat([Buffer.from([0, 1]), v === 5 ? Buffer.from([0]) : Buffer.alloc(0), str('fuzz/#'), Buffer.from([r.pick([3, 0x80, v === 5 ? 0x30 : 0x04])])]))],
  ['second-connect', (r, v) => connect(r, v, `fz-again-${r.int(1e6)}`)],
  ['server-packet', (r) => r.pick([Buffer.from([0x20, 0x02, 0x00, 0x00]), Buffer.from([0x90, 0x03, 0x00, 0x01, 0x00]), Buffer.from([0xb0, 0x02, 0x00, 0x01]), Buffer.from([0xd0, 0x00]), Buffer.from([0x00, 0x00])])],
  ['auth', (_r, v) => v === 5 ? auth() : Buffer.from([0xf0, 0x00])],
  ['remaining-length-5-bytes', () => Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00])],
  ['non-minimal-length', (r) => r.pick([Buffer.from([0xc0, 0x80, 0x00]), Buffer.from([0x40, 0x82, 0x00, 0x00, 0x01])])],
  ['huge-length', (r) => Buffer.concat([Buffer.from([0x30, 0xff, 0xff, 0xff, 0x7f]), r.bytes(r.int(32))])]
]

/** Protocol errors of MQTT 5 only: properties. */
const V5_ONLY: Array<[string, (r: Random) => Buffer]> = [
  ['invalid-property-id', (r) => publishRaw(5, Buffer.from('fuzz/p'), 0x30, 1, Buffer.from([r.pick([0x7f, 0x12, 0x24, 0x00]), 0]))],
  ['duplicate-property', (r) => publishRaw(5, Buffer.from('fuzz/p'), 0x32, 7, r.pick([Buffer.from([0x01, 0, 0x01, 1]), Buffer.from([0x02, 0, 0, 0, 9, 0x02, 0, 0, 0, 9])]))],
  ['property-past-end', () => publishRaw(5, Buffer.from('poison/1'), 0x31, 1, Buffer.from([0x26, 0x00, 0x01, 0x61, 0x7f, 0xff]))],
  ['property-value-range', (r) => publishRaw(5, Buffer.from('fuzz/p'), 0x30, 1, r.pick([Buffer.from([0x01, 2]), Buffer.from([0x23, 0, 0]), Buffer.from([0x0b, 1])]))],
  ['bad-utf8-property', (r) => publishRaw(5, Buffer.from('fuzz/p'), 0x30, 1, Buffer.concat([Buffer.from([0x03]), str(r.pick(BAD_UTF8))]))]
]

/**
 * A protocol error for a connection at `version` whose CONNECT was sent: the broker must
 * close the connection after it (v5: with a DISCONNECT or CONNACK carrying an error code).
 */
export function protocolError (r: Random, version: Version): Mutation {
  if (version === 5 && r.chance(0.3)) {
    const [name, make] = r.pick(V5_ONLY)
    return { name, bytes: make(r), definite: true }
  }
  const [name, make] = r.pick(COMMON)
  return { name, bytes: make(r, version), definite: true }
}

/** A blind mutation of the valid frame `f`: the result may be valid, a protocol error, or not MQTT at all. */
export function blindMutation (r: Random, f: Buffer): Mutation {
  const out = Buffer.from(f)
  switch (r.int(5)) {
    case 0: {
      for (let n = 1 + r.int(3); n > 0; n--) { const i = r.int(out.length); out[i] ^= 1 << r.int(8) }
      return { name: 'bitflip', bytes: out, definite: false }
    }
    case 1: {
      const { body } = split(out)
      const keep = r.int(body.length + 1)
      return { name: 'truncate', bytes: frame(out[0], body.subarray(0, keep)), definite: false }
    }
    case 2: {
      const { body } = split(out)
      const len = Math.max(0, body.length + r.pick([-3, -2, -1, 1, 2, 3, 1000]))
      return { name: 'wrong-length', bytes: Buffer.concat([Buffer.from([out[0]]), encodeVarint(len), body]), definite: false }
    }
    case 3: {
      const { body } = split(out)
      return { name: 'extend', bytes: frame(out[0], Buffer.concat([body, r.bytes(1 + r.int(8))])), definite: false }
    }
    default:
      return { name: 'garbage', bytes: r.bytes(1 + r.int(40)), definite: false }
  }
}

/** The body of a well-formed frame. */
function split (f: Buffer): { body: Buffer } {
  let i = 1
  while ((f[i] & 128) !== 0) i++
  return { body: f.subarray(i + 1) }
}

/**
 * Cuts `bytes` into the writes a connection makes: all at once (many packets per write),
 * at random places, or one byte per write (splits at every byte).
 */
export function writes (r: Random, bytes: Buffer): Buffer[] {
  const mode = r.int(10)
  if (mode < 5 || bytes.length < 2) return [bytes]
  if (mode === 9 && bytes.length <= 300) return Array.from(bytes, b => Buffer.from([b]))
  const out: Buffer[] = []
  let pos = 0
  while (pos < bytes.length) {
    const n = 1 + r.int(Math.min(64, bytes.length - pos))
    out.push(bytes.subarray(pos, pos + n))
    pos += n
  }
  return out
}
